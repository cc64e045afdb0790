package dataplane

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/cilium/ebpf"
)

// TestVIPStatsGUE: a server's per-VIP counter counts GUE over IPv4 as it
// counts IP-in-IP — from a mux (with and without private data), chained
// (hop 1, counted apart) — by the inner packet; other UDP, and GUE
// carrying no VIP of the server, is not counted.
func TestVIPStatsGUE(t *testing.T) {
	netlabtest.RequireRoot(t)
	vip, other := netip.MustParseAddr("198.18.100.1"), netip.MustParseAddr("198.18.100.9")
	s, err := newVIPStats([]netip.Addr{vip})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mux, server := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.21")
	inner := func(dst netip.Addr, payload int) []byte {
		return wiretest.Segment{Flow: wire.Flow{Src: netip.MustParseAddr("198.18.1.10"), Dst: dst, SrcPort: 40000, DstPort: 80, Proto: wire.ProtoTCP},
			Flags: wiretest.ACK, Seq: 1, Ack: 1, Payload: make([]byte, payload)}.IPv4()
	}
	gue := func(in []byte, o *wire.Option) []byte {
		out, err := wire.EncapsulateGUE(in, mux, server, 0xc001, wire.GUEDefaultPort, o)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	send := func(ip []byte) {
		t.Helper()
		ret, err := s.objs.BeamerVipstats.Run(&ebpf.RunOptions{Data: wiretest.Frame(wiretest.MuxMAC, []byte{2, 0, 0, 0, 0, 1}, ip)})
		if err != nil || int32(ret) != -1 {
			t.Fatalf("returned %d, %v; want TCX_NEXT (-1)", int32(ret), err)
		}
	}
	in100 := inner(vip, 100) // 140 bytes
	send(gue(in100, &wire.Option{Generation: 1, Incarnation: 1}))
	send(gue(in100, nil)) // a subflow by server id: no private data
	send(gue(inner(vip, 10), &wire.Option{Hop: 1, Generation: 1, Incarnation: 1, Changed: 1, Prev: []netip.Addr{server, mux}}))
	send(gue(inner(other, 100), nil))
	dns := wiretest.Datagram{Flow: wire.Flow{Src: netip.MustParseAddr("198.18.1.10"), Dst: server, SrcPort: 5353, DstPort: 53}, Payload: []byte("query")}.IPv4()
	send(dns)
	got, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	if want := (VIPTraffic{Packets: 2, Bytes: 2 * 140, ChainedPackets: 1, ChainedBytes: 50}); got[vip] != want {
		t.Errorf("%v: %+v, want %+v", vip, got[vip], want)
	}
	if _, ok := got[other]; ok {
		t.Errorf("an address that is no VIP of the agent was counted")
	}
}
