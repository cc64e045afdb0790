package dpbench

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
)

// The agent's bench: server B with the VIP on loopback, one real connection
// from a client (so the socket lookup finds it), and a static neighbour for
// server A, the previous owner packets are chained to.
var (
	agentAddr  = netip.MustParseAddr("198.18.0.11")
	prevAddr   = netip.MustParseAddr("198.18.0.10")
	clientAddr = netip.MustParseAddr("198.18.200.7")
)

const (
	tcOK       = 0
	tcShot     = 2
	tcRedirect = 7
)

// benchConn is the agent bench's one real connection: the listener on the
// VIP and both ends, so the agent's socket lookup finds it, and the
// server interface the packets come in on.
type benchConn struct {
	l       net.Listener
	c, s    net.Conn
	ifindex int // the server's eth0
}

func (b *benchConn) Close() {
	for _, c := range []io.Closer{b.s, b.c, b.l} {
		if c != nil {
			c.Close()
		}
	}
}

// benchConnection gives the previous owner prev a static neighbour entry on
// the server's eth0 (packets are chained to it) and opens a connection from
// client to vip port 80 inside ns, in the family of vip.
func benchConnection(ns *netlab.Namespace, prev, vip, client netip.Addr) (*benchConn, error) {
	eth0, err := ns.Netlink().LinkByName("eth0")
	if err != nil {
		return nil, err
	}
	network, family := "tcp4", netlink.FAMILY_V4
	if vip.Is6() {
		network, family = "tcp6", netlink.FAMILY_V6
	}
	if err := ns.Netlink().NeighSet(&netlink.Neigh{LinkIndex: eth0.Attrs().Index, IP: net.IP(prev.AsSlice()),
		HardwareAddr: net.HardwareAddr{2, 0xbe, 0xa0, 0, 1, 0x10}, State: netlink.NUD_PERMANENT, Family: family}); err != nil {
		return nil, err
	}
	b := &benchConn{ifindex: eth0.Attrs().Index}
	err = ns.Do(func() (err error) {
		if b.l, err = net.Listen(network, netip.AddrPortFrom(vip, 80).String()); err != nil {
			return err
		}
		d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(client, 41000)), Timeout: 2 * time.Second}
		if b.c, err = d.Dial(network, b.l.Addr().String()); err != nil {
			return err
		}
		b.s, err = b.l.Accept()
		return err
	})
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

func skbContext(ifindex int) []byte {
	ctx := make([]byte, 192) // struct __sk_buff, all zero but ifindex
	binary.LittleEndian.PutUint32(ctx[40:], uint32(ifindex))
	return ctx
}

// agentRows measures the agent's branches next to an empty tc program.
func agentRows(r *rig, rep *Report, o Options, add func(string, int, int, trial, string) error) error {
	ns, err := r.lab.Namespace("srv")
	if err != nil {
		return err
	}
	peer, err := r.lab.Namespace("srvnet")
	if err != nil {
		return err
	}
	if err := r.lab.Veth(ns, "eth0", netip.PrefixFrom(agentAddr, 24), peer, "eth0", netip.MustParsePrefix("198.18.0.2/24"), 0); err != nil {
		return err
	}
	for _, a := range []netip.Addr{beamerVIP, clientAddr} {
		if err := ns.AddAddr("lo", netip.PrefixFrom(a, 32)); err != nil {
			return err
		}
	}
	if err := ns.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	conn, err := benchConnection(ns, prevAddr, beamerVIP, clientAddr)
	if err != nil {
		return fmt.Errorf("agent bench connection: %w", err)
	}
	defer conn.Close()

	a, err := loadBenchAgent(dataplane.AgentOptions{Addr: agentAddr,
		Trusted:          []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs:             []dataplane.AgentVIP{{VIP: beamerVIP, Buckets: 1000, ChainWindow: 4 * time.Minute}},
		GenerationMemory: -1})
	if err != nil {
		return err
	}
	defer a.Close()
	var base *agentBaseline // the compare mode's (--compare-agent)
	if o.AgentBaseline != nil {
		if base, err = a.loadBaseline(o.AgentBaseline); err != nil {
			return err
		}
		defer base.Close()
		rep.AgentBaselinePrivate = base.Private
	}
	now := time.Now()
	a.SyncClock(now)

	encap := func(sport uint16, opt *wire.Option) []byte {
		inner := wiretest.Segment{Flow: wire.Flow{Src: clientAddr, Dst: beamerVIP, SrcPort: sport, DstPort: 80, Proto: wire.ProtoTCP},
			Flags: wiretest.ACK, Seq: 1, Ack: 1}.IPv4()
		outer, err := wire.Encapsulate(inner, muxAddr, agentAddr, opt)
		if err != nil {
			panic(err)
		}
		return wiretest.Frame(wiretest.MuxMAC, net.HardwareAddr{2, 0xbe, 0xa0, 0, 0, 0x11}, outer)
	}
	moved := &wire.Option{Prev: []netip.Addr{prevAddr}, Changed: uint32(now.Unix() - 10), Generation: 5}
	// Chained once already (hop 1) along a history of three: this server is
	// prev[1] and skips itself, on to prev[2].
	multi := &wire.Option{Prev: []netip.Addr{netip.MustParseAddr("198.18.0.12"), agentAddr, prevAddr}, Hop: 1,
		Changed: uint32(now.Unix() - 10), Generation: 5}
	steady := &wire.Option{Generation: 5}
	stale := &wire.Option{Generation: 4}
	ctx := skbContext(conn.ifindex)
	rows := []struct {
		name    string
		prog    *ebpf.Program
		single  *ebpf.Program // the production program, for the per-packet method
		sport   uint16        // the client port: 41000 is the local connection's
		opt     *wire.Option
		want    uint32
		counter string
		method  string
	}{
		{"empty-tc", a.EmptyProgram(), a.EmptyProgram(), 41000, moved, tcOK, "", "tc program returning TC_ACT_OK"},
		{"decap-floor", a.DecapFloorProgram(), a.DecapFloorProgram(), 41000, moved, tcOK, "", "strips the 36-byte outer header and puts it back, nothing else"},
		{"strip-floor-tc", nil, a.StripFloorProgram(), 41000, steady, tcOK, "",
			"per packet only: strips the 36-byte outer header (bpf_skb_adjust_room, IPv4 decap) and hands the packet up, nothing else"},
		{"agent-local", a.BenchProgram(), a.Program(), 41000, steady, tcOK, "to_stack",
			"fast path: packet of a local connection whose bucket has not moved: decapsulation, no socket lookup (restored after each run)"},
		{"agent-local-moved", a.BenchProgram(), a.Program(), 41000, moved, tcOK, "local_socket",
			"packet of a local connection in a bucket that moved: socket lookup, decapsulation (restored after each run)"},
		{"agent-chain", a.BenchProgram(), a.Program(), 42000, moved, tcRedirect, "chained",
			"stray packet in the chaining window: rewritten towards the previous server (restored after each run)"},
		{"agent-chain-multihop", a.BenchProgram(), a.Program(), 42002, multi, tcRedirect, "chained",
			"stray packet chained once already, this server second of three previous owners: on to the third (restored after each run)"},
		{"agent-drop", a.BenchProgram(), a.Program(), 42001, stale, tcShot, "drop_stale_generation", "stray packet from a stale mux: dropped"},
	}
	for _, row := range rows {
		if row.name == "agent-drop" { // the server has seen generation 5 by now
			a.SetNewestSeen(0, 5)
		}
		t := trial{ns: ns, prog: row.prog, frame: encap(row.sport, row.opt), ctx: ctx, want: row.want,
			repeat: o.Repeat, counter: row.counter, read: a.Counters, single: row.single, packets: o.PerPacket}
		if base != nil && row.prog == a.BenchProgram() {
			t.base, t.baseSingle = base.BenchProgram(), base.Program()
		}
		how := "test run, repeat; "
		if row.prog == nil {
			how = "test run; "
		}
		if err := add(row.name, 1, 0, t, how+row.method); err != nil {
			return err
		}
	}
	if err := agentXDPRows(ns, a, base, conn.ifindex, encap(41000, steady), encap(42000, moved), o, add); err != nil {
		return err
	}
	if err := gueAgentRows(ns, a, conn.ifindex, o, add); err != nil { // gue.go
		return err
	}
	return cheetahAgentRows(ns, a, ctx, o, add)
}
