package dataplane

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

var tcActions = map[uint32]string{0: "pass", 2: "drop", 7: "redirect"}

// skbContext is a struct __sk_buff for a test run: all zero but ifindex.
func skbContext(ifindex int) []byte {
	ctx := make([]byte, 192)
	binary.LittleEndian.PutUint32(ctx[40:], uint32(ifindex))
	return ctx
}

// runTC runs prog once on frame in ns, as if received on ifindex.
func runTC(t testing.TB, ns *netlab.Namespace, ifindex int, prog *ebpf.Program, frame []byte) (string, []byte) {
	t.Helper()
	opts := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+256), Context: skbContext(ifindex)}
	var ret uint32
	must(t, ns.Do(func() error {
		var err error
		ret, err = prog.Run(opts)
		return err
	}))
	a, ok := tcActions[ret]
	if !ok {
		a = fmt.Sprintf("tc action %d", ret)
	}
	return a, opts.DataOut
}

// agentBench is a server namespace set up as the vectors' agent scenario
// says: its address on eth0, VIPs and the client on loopback, the listeners
// and connections, and the neighbours of the servers it chains to.
type agentBench struct {
	ns      *netlab.Namespace
	ifindex int
	agent   *Agent
}

func newAgentBench(t *testing.T, s *wiretest.AgentScenario) *agentBench {
	ns, _ := netlabtest.NewRig(t, "agt").Pair("srv", netip.PrefixFrom(s.Addr, 24), "net", netip.MustParsePrefix("198.18.0.2/24"), 0)
	nl := ns.Netlink()
	eth0, err := nl.LinkByName("eth0")
	must(t, err)
	hw, _ := net.ParseMAC("02:be:a0:00:00:11")
	must(t, nl.LinkSetHardwareAddr(eth0, hw))
	must(t, ns.Sysctl("net.ipv4.ip_forward", "1"))
	for _, h := range s.NextHops {
		if h.Result == "tx" || h.Result == "redirect" {
			mac, _ := net.ParseMAC(h.DstMAC)
			must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: eth0.Attrs().Index, IP: net.IP(h.Addr.AsSlice()), HardwareAddr: mac,
				State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V4}))
		}
	}
	opts := AgentOptions{Addr: s.Addr, Trusted: s.Trusted, MaxClockSkew: time.Duration(s.MaxSkew) * time.Second,
		MaxGenerationJump: s.MaxGenJump, GenerationMemory: -1, GUEPorts: s.GUEPorts}
	for _, v := range s.VIPs {
		must(t, ns.AddAddr("lo", netip.PrefixFrom(v.VIP, 32)))
		opts.VIPs = append(opts.VIPs, AgentVIP{VIP: v.VIP, Buckets: v.Buckets, ChainWindow: time.Duration(v.Window) * time.Second})
	}
	clients := map[netip.Addr]bool{}
	for _, sk := range s.Sockets {
		if (sk.Kind == "connection" || sk.Kind == "udp-connected") && !clients[sk.Remote.Addr()] {
			clients[sk.Remote.Addr()] = true
			must(t, ns.AddAddr("lo", netip.PrefixFrom(sk.Remote.Addr(), 32)))
		}
	}
	openSockets(t, ns, s.Sockets)
	a, err := LoadAgent(opts)
	must(t, err)
	t.Cleanup(func() { a.Close() })
	a.SyncClock(time.Unix(int64(s.Now), 0))
	return &agentBench{ns: ns, ifindex: eth0.Attrs().Index, agent: a}
}

// openSockets creates the listeners and connections of the scenario inside
// the namespace; they are closed when the test ends.
func openSockets(t *testing.T, ns *netlab.Namespace, sockets []wiretest.SocketVector) {
	listeners := map[netip.AddrPort]net.Listener{}
	must(t, ns.Do(func() error {
		for _, sk := range sockets {
			if sk.Kind == "udp" || sk.Kind == "udp-connected" {
				c, err := udpSocket(sk.Local, sk.Remote)
				if err != nil {
					return err
				}
				t.Cleanup(func() { c.Close() })
				continue
			}
			if _, ok := listeners[sk.Local]; ok {
				continue
			}
			l, err := net.Listen("tcp4", sk.Local.String())
			if err != nil {
				return err
			}
			t.Cleanup(func() { l.Close() })
			listeners[sk.Local] = l
		}
		for _, sk := range sockets {
			if sk.Kind != "connection" {
				continue
			}
			d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(sk.Remote), Timeout: 2 * time.Second}
			c, err := d.Dial("tcp4", sk.Local.String())
			if err != nil {
				return err
			}
			t.Cleanup(func() { c.Close() })
			s, err := listeners[sk.Local].Accept()
			if err != nil {
				return err
			}
			t.Cleanup(func() { s.Close() })
		}
		return nil
	}))
}

// TestAgentVectors runs the agent cases of testdata/vectors.json, in order,
// through the tc program and checks action, counter and exact output bytes.
func TestAgentVectors(t *testing.T) {
	v, err := wiretest.LoadVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	b := newAgentBench(t, &v.Agent)
	for _, c := range v.Agent.Cases {
		in, err := hex.DecodeString(c.Input)
		must(t, err)
		before, err := b.agent.Counters()
		must(t, err)
		action, out := runTC(t, b.ns, b.ifindex, b.agent.Program(), in)
		after, err := b.agent.Counters()
		must(t, err)
		if action != c.Action {
			t.Errorf("%s: action %s, want %s", c.Name, action, c.Action)
		}
		if d := after[c.Counter] - before[c.Counter]; d != 1 {
			t.Errorf("%s: counter %s moved by %d, want 1 (after %v)", c.Name, c.Counter, d, after)
		}
		if c.Output != "" {
			want, _ := hex.DecodeString(c.Output)
			if !bytes.Equal(out, want) {
				t.Errorf("%s: output differs\n got %x\nwant %x", c.Name, out, want)
			}
		}
	}
}

// udpSocket binds a UDP socket to local (SO_REUSEADDR, so that a bound and
// a connected socket share the port) and connects it to remote when valid.
func udpSocket(local, remote netip.AddrPort) (net.PacketConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1) })
		if err != nil {
			return err
		}
		return serr
	}}
	if !remote.IsValid() {
		return lc.ListenPacket(context.Background(), "udp4", local.String())
	}
	d := net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(local), Control: lc.Control}
	c, err := d.Dial("udp4", remote.String())
	if err != nil {
		return nil, err
	}
	return c.(*net.UDPConn), nil
}
