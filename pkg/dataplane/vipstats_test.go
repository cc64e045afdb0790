package dataplane

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// TestVIPStats runs the per-VIP counter on the packets a server receives:
// encapsulated from a mux (with and without the option), daisy-chained
// (hop 1), in IP-in-IP and in GUE, already decapsulated, and packets of
// other addresses, other UDP or not IPv4, which it must not count. Every
// packet goes on (TCX_NEXT).
func TestVIPStats(t *testing.T) {
	netlabtest.RequireRoot(t)
	vip, other := netip.MustParseAddr("198.18.100.1"), netip.MustParseAddr("198.18.100.9")
	s, err := newVIPStats([]netip.Addr{vip})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mux, server := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.21")
	inner := func(dst netip.Addr, payload int) []byte {
		seg := wiretest.Segment{Flow: wire.Flow{Src: netip.MustParseAddr("198.18.1.10"), Dst: dst, SrcPort: 40000, DstPort: 80, Proto: wire.ProtoTCP},
			Flags: wiretest.ACK, Seq: 1, Ack: 1, Payload: make([]byte, payload)}
		return seg.IPv4()
	}
	encap := func(in []byte, o *wire.Option) []byte {
		out, err := wire.Encapsulate(in, mux, server, o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	mac := []byte{2, 0, 0, 0, 0, 1}
	run := func(frame []byte) {
		t.Helper()
		ret, err := s.objs.BeamerVipstats.Run(&ebpf.RunOptions{Data: frame})
		if err != nil {
			t.Fatal(err)
		}
		if int32(ret) != -1 {
			t.Fatalf("returned %d, want TCX_NEXT (-1): the counter must hand every packet on", int32(ret))
		}
	}
	send := func(ip []byte) { t.Helper(); run(wiretest.Frame(wiretest.MuxMAC, mac, ip)) }
	in100 := inner(vip, 100) // 140 bytes: 20 IPv4 + 20 TCP + 100
	send(encap(in100, &wire.Option{Generation: 1, Incarnation: 1}))
	send(encap(in100, nil)) // Maglev: IP-in-IP without the option
	send(in100)             // decapsulated already (XDP)
	send(encap(inner(vip, 10), &wire.Option{Hop: 1, Generation: 1, Incarnation: 1, Changed: 1, Prev: []netip.Addr{server, mux}}))
	send(encap(inner(other, 100), nil))
	send(inner(other, 100))
	ipv6 := make([]byte, 14+40) // an IPv6 frame to nowhere: not counted
	ipv6[12], ipv6[13], ipv6[14] = 0x86, 0xdd, 0x60
	run(ipv6)
	// GUE over IPv4 (docs/wire-format.md "GUE"): the same, by the inner
	// packet, the private data's hop telling chained ones apart; other UDP
	// is not counted.
	gue := func(in []byte, o *wire.Option) []byte {
		out, err := wire.EncapsulateGUE(in, mux, server, 0xc001, wire.GUEDefaultPort, o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	send(gue(in100, &wire.Option{Generation: 1, Incarnation: 1}))
	send(gue(in100, nil)) // a subflow by server id: no private data
	send(gue(inner(vip, 10), &wire.Option{Hop: 1, Generation: 1, Incarnation: 1, Changed: 1, Prev: []netip.Addr{server, mux}}))
	send(gue(inner(other, 100), nil))
	send(wiretest.Datagram{Flow: wire.Flow{Src: netip.MustParseAddr("198.18.1.10"), Dst: server, SrcPort: 5353, DstPort: 53}, Payload: []byte("query")}.IPv4())
	got, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	want := VIPTraffic{Packets: 5, Bytes: 5 * 140, ChainedPackets: 2, ChainedBytes: 100}
	if got[vip] != want {
		t.Errorf("%v: %+v, want %+v", vip, got[vip], want)
	}
	if _, ok := got[other]; ok {
		t.Errorf("an address that is no VIP of the agent was counted")
	}
}
