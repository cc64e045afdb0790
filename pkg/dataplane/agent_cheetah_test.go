package dataplane

import (
	"context"
	"encoding/binary"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"net"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

var tsSegment = wiretest.TSSegment

// tcpTimestamps reads TSval and TSecr from an IPv4 packet (no Ethernet)
// and checks its TCP checksum.
func tcpTimestamps(t *testing.T, pkt []byte) (tsval, tsecr uint32) {
	t.Helper()
	p := gopacket.NewPacket(pkt, layers.LayerTypeIPv4, gopacket.Default)
	tcp, _ := p.Layer(layers.LayerTypeTCP).(*layers.TCP)
	ip, _ := p.Layer(layers.LayerTypeIPv4).(*layers.IPv4)
	if tcp == nil || ip == nil {
		t.Fatalf("not TCP/IPv4: %x", pkt)
	}
	// The checksum over pseudo-header and segment must come out 0.
	seg := pkt[ip.IHL*4 : ip.Length]
	pseudo := make([]byte, 12+len(seg))
	copy(pseudo, ip.SrcIP.To4())
	copy(pseudo[4:], ip.DstIP.To4())
	pseudo[9] = 6
	binary.BigEndian.PutUint16(pseudo[10:], uint16(len(seg)))
	copy(pseudo[12:], seg)
	if wire.Checksum(pseudo) != 0 {
		t.Fatalf("TCP checksum wrong after the rewrite")
	}
	for _, o := range tcp.Options {
		if o.OptionType == layers.TCPOptionKindTimestamps {
			return binary.BigEndian.Uint32(o.OptionData), binary.BigEndian.Uint32(o.OptionData[4:])
		}
	}
	t.Fatalf("no timestamp option")
	return 0, 0
}

type cheetahAgentRig struct {
	ns      *netlab.Namespace
	ifindex int
	agent   *Agent
}

func newCheetahAgentRig(t *testing.T, vip netip.Addr) *cheetahAgentRig {
	ns, _ := netlabtest.NewRig(t, "cha").Pair("srv", netip.MustParsePrefix("198.18.0.10/24"), "net", netip.MustParsePrefix("198.18.0.2/24"), 0)
	must(t, ns.AddAddr("lo", netip.PrefixFrom(vip, 32)))
	a, err := LoadAgent(AgentOptions{Addr: netip.MustParseAddr("198.18.0.10"), Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []AgentVIP{{VIP: vip, Buckets: 16}}, GenerationMemory: -1})
	must(t, err)
	t.Cleanup(func() { a.Close() })
	idx, err := ns.LinkIndex("eth0")
	must(t, err)
	return &cheetahAgentRig{ns: ns, ifindex: idx, agent: a}
}

// The C side of the shared vectors: the egress program writes exactly the
// TSval the model computes (fast and general option layouts, both key ids,
// clock wrap), with a correct TCP checksum; the agent shows the stack
// exactly the TSecr the model says, for data echoes, SYN-cookie ACKs to a
// real listener and handshake echoes to no listener.
func TestCheetahAgentVectors(t *testing.T) {
	vec, err := cookie.LoadVectors()
	must(t, err)
	vip := vec.Cookies[0].VIP
	r := newCheetahAgentRig(t, vip)

	for _, v := range vec.Cookies {
		must(t, cheetah.SetVIP(r.agent, cheetah.AgentVIP{VIP: v.VIP, ID: v.ID, Keys: cookie.Keys{Current: v.KID, Keys: v.Keys}}))
		seg := tsSegment(netip.AddrPortFrom(v.VIP, v.VPort), netip.AddrPortFrom(v.Client, v.CPort), v.SynAck, true, v.TSval, 777, v.SynAck)
		egress, err := cheetah.Egress(r.agent)
		must(t, err)
		act, out := runTC(t, r.ns, r.ifindex, egress, wiretest.Frame(wiretest.MuxMAC, wiretest.ClientMAC, seg))
		if act != "pass" {
			t.Fatalf("%s: egress %s", v.Name, act)
		}
		tsval, tsecr := tcpTimestamps(t, out[14:14+len(seg)])
		if tsval != v.Out || tsecr != 777 {
			t.Errorf("%s: TSval %#x TSecr %d, want %#x 777", v.Name, tsval, tsecr, v.Out)
		}
	}
	c, err := cheetah.AgentCounters(r.agent)
	must(t, err)
	if c["egress_cookie"] != uint64(len(vec.Cookies)) || c["egress_synack"] != 2 || c["egress_fast"] != uint64(len(vec.Cookies)-2) {
		t.Errorf("egress counters %v", c)
	}

	// A listener on VIP:80; nothing on VIP:81.
	var l net.Listener
	must(t, r.ns.Do(func() error {
		var err error
		l, err = (&net.ListenConfig{}).Listen(context.Background(), "tcp4", netip.AddrPortFrom(vip, 80).String())
		return err
	}))
	defer l.Close()
	client := netip.MustParseAddr("198.18.1.10")
	for _, v := range vec.Restores {
		port := uint16(81)
		if v.Listener {
			port = 80
		}
		seg := tsSegment(netip.AddrPortFrom(client, 40000), netip.AddrPortFrom(vip, port), false, true, 5555, v.Echo, false)
		outer, err := wire.Encapsulate(seg, netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.10"), nil)
		must(t, err)
		act, out := runTC(t, r.ns, r.ifindex, r.agent.Program(), wiretest.Frame(wiretest.MuxMAC, wiretest.ClientMAC, outer))
		if act != "pass" {
			t.Fatalf("%s: agent %s", v.Name, act)
		}
		tsval, tsecr := tcpTimestamps(t, out[14:14+len(seg)])
		if tsval != 5555 || tsecr != v.Restored {
			t.Errorf("%s: stack sees TSval %d TSecr %#x, want 5555 %#x", v.Name, tsval, tsecr, v.Restored)
		}
	}
}
