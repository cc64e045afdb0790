package dataplane

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// TestVIPStats6 runs the per-VIP counter on IPv6: GUE over IPv6 from a mux
// (with and without private data), daisy-chained (hop 1), plain IPv6 to
// the VIP, and packets to another address or GUE naming an IPv4 packet,
// which it must not count.
func TestVIPStats6(t *testing.T) {
	netlabtest.RequireRoot(t)
	vip, other := mux6VIP, netip.MustParseAddr("2001:db8:100::9")
	s, err := newVIPStats([]netip.Addr{vip, netip.MustParseAddr("198.18.100.1")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	me := mux6Server[1026]
	run := func(frame []byte) {
		t.Helper()
		ret, err := s.objs.BeamerVipstats.Run(&ebpf.RunOptions{Data: frame})
		if err != nil {
			t.Fatal(err)
		}
		if int32(ret) != -1 {
			t.Fatalf("returned %d, want TCX_NEXT (-1)", int32(ret))
		}
	}
	inner := func(dst netip.Addr, payload int) []byte {
		return pkt6{src: mux6Client, dst: dst, proto: 6, sport: 40000, dport: 80, flags: 0x10, payload: make([]byte, payload)}.frame()
	}
	in100 := inner(vip, 100) // 160 bytes: 40 IPv6 + 20 TCP + 100
	run(gue6Wrap(in100, mux6Addr, me, forwarding.DefaultGUEPort, priv6(1, 0, 0, 0)))
	run(gue6Wrap(in100, mux6Addr, me, forwarding.DefaultGUEPort, nil))
	run(in100)
	run(gue6Wrap(inner(vip, 10), mux6Server[1027], me, forwarding.DefaultGUEPort, priv6(1, 1, 0, 1, mux6Server[1027], me)))
	run(gue6Wrap(inner(other, 100), mux6Addr, me, forwarding.DefaultGUEPort, nil))
	run(inner(other, 100))
	ipv4Named := gue6Wrap(in100, mux6Addr, me, forwarding.DefaultGUEPort, nil)
	ipv4Named[14+40+8+1] = 4 // GUE naming an IPv4 inner packet
	run(ipv4Named)
	got, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	want := VIPTraffic{Packets: 3, Bytes: 3 * 160, ChainedPackets: 1, ChainedBytes: 70}
	if got[vip] != want {
		t.Errorf("%v: %+v, want %+v", vip, got[vip], want)
	}
	if _, ok := got[other]; ok {
		t.Errorf("an address that is no VIP of the agent was counted")
	}
}
