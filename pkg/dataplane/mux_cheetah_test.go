package dataplane

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// cheetahMuxRig is a Cheetah mux on the vectors' bench network, with the
// vectors' server ids at addresses the bench network reaches.
type cheetahMuxRig struct {
	t     *testing.T
	m     *Mux
	bench *muxBench
	vip   netip.Addr
	addr  map[forwarding.ServerID]netip.Addr
}

func newCheetahMuxRig(t *testing.T, keys cookie.Keys, policy forwarding.CheetahPolicy) *cheetahMuxRig {
	v, err := wiretest.LoadVectors()
	must(t, err)
	m, err := LoadMux(MuxOptions{Addr: v.Mux.MuxAddr})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	r := &cheetahMuxRig{t: t, m: m, bench: newMuxBench(t, &v.Mux), vip: netip.MustParseAddr("198.18.100.1"),
		addr: map[forwarding.ServerID]netip.Addr{1025: netip.MustParseAddr("198.18.0.10"), 1031: netip.MustParseAddr("198.18.0.11"),
			2000: netip.MustParseAddr("198.18.2.12"), 32767: netip.MustParseAddr("198.18.0.15")}}
	table := forwarding.NewTable(16)
	ids := []forwarding.ServerID{1025, 1031, 2000, 32767}
	for _, id := range ids {
		table.Servers[id] = forwarding.Server{Addr: r.addr[id], State: forwarding.Active}
	}
	table.Servers[32767] = forwarding.Server{Addr: r.addr[32767], State: forwarding.Retired}
	for i := range table.Buckets {
		table.Buckets[i] = forwarding.Bucket{Current: ids[i%3]}
	}
	must(t, m.SetInstance(forwarding.Instance{Name: "cz", Strategy: forwarding.StrategyCheetah, VIPs: []netip.Addr{r.vip},
		PortLow: 80, PortHigh: 443, Buckets: 16, Cheetah: &forwarding.CheetahOptions{Policy: policy, Keys: keys}}, table))
	return r
}

// send runs one segment through the mux: where it went ("" when dropped).
func (r *cheetahMuxRig) send(seg []byte) netip.Addr {
	r.t.Helper()
	action, out := runXDP(r.t, r.bench.ns, r.bench.ifindex, r.m.Program(), wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, seg))
	if action == "drop" {
		return netip.Addr{}
	}
	if action != "tx" && action != "redirect" {
		r.t.Fatalf("mux: %s", action)
	}
	o, err := wire.Decapsulate(out[14:])
	must(r.t, err)
	if o.Option != nil {
		r.t.Fatalf("cookie-forwarded packet carries a Beamer option")
	}
	return o.Dst
}

// The C side of the shared vectors at the mux: the echo of every TSval the
// servers write (data and SYN-ACK, both key ids, wrapped clocks, the
// largest id) reaches exactly the server the vector names — in the common
// option layout and in a SYN-style layout that needs the general parse.
func TestCheetahMuxVectors(t *testing.T) {
	vec, err := cookie.LoadVectors()
	must(t, err)
	r := newCheetahMuxRig(t, cookie.Keys{Keys: vec.Cookies[0].Keys}, forwarding.CheetahRR)
	for _, v := range vec.Cookies {
		for _, general := range []bool{false, true} {
			seg := tsSegment(netip.AddrPortFrom(v.Client, v.CPort), netip.AddrPortFrom(v.VIP, v.VPort), false, true, 99, v.Out, general)
			if got := r.send(seg); got != r.addr[forwarding.ServerID(v.ID)] {
				t.Errorf("%s (general parse %v): echo went to %v, want server %d at %v", v.Name, general, got, v.ID, r.addr[forwarding.ServerID(v.ID)])
			}
		}
	}
	c, err := r.m.CountersOf(forwarding.StrategyCheetah)
	must(t, err)
	if c["cookie_hit"] != uint64(2*len(vec.Cookies)) || c["fast_parse"] != uint64(len(vec.Cookies)) {
		t.Errorf("counters %v", c)
	}
}

// Forged cookies: a client that learnt the cookie its connection got from
// a server replays it on its other connections; the echo lands on that
// server no more often than chance (the obfuscation differs per 4-tuple),
// and cookies naming no server are dropped and counted, never sent on.
// Round robin spreads SYNs over the active servers only.
func TestCheetahMuxForgedCookies(t *testing.T) {
	k0, err := cookie.NewKey()
	must(t, err)
	ks := cookie.Keys{Keys: [2]cookie.Key{k0, k0}}
	r := newCheetahMuxRig(t, ks, forwarding.CheetahRR)
	client := netip.MustParseAddr("198.18.1.77")
	const target = 1025
	learnt := ks.Encode(target, 0, wire.Flow{Src: client, Dst: r.vip, SrcPort: 5000, DstPort: 80, Proto: 6})
	tsecr := cookie.TSval(0x12345678, learnt, false)
	hits, dropped := 0, 0
	const n = 2000
	for p := 0; p < n; p++ {
		seg := tsSegment(netip.AddrPortFrom(client, uint16(5001+p)), netip.AddrPortFrom(r.vip, 80), false, true, 1, tsecr, false)
		switch r.send(seg) {
		case r.addr[target]:
			hits++
		case netip.Addr{}:
			dropped++
		}
	}
	// 4 of 32768 slots hold servers: a replayed cookie names one with
	// probability 1/8192, the target 1/32768.
	if hits > 2 || dropped < n-5 {
		t.Fatalf("replayed cookie: %d of %d reached the target, %d dropped", hits, n, dropped)
	}
	c, err := r.m.CountersOf(forwarding.StrategyCheetah)
	must(t, err)
	if c["bad_cookie"] != uint64(dropped) {
		t.Fatalf("bad cookies counted %d, dropped %d", c["bad_cookie"], dropped)
	}

	seen := map[netip.Addr]int{}
	for p := 0; p < 30; p++ {
		seg := tsSegment(netip.AddrPortFrom(client, uint16(9000+p)), netip.AddrPortFrom(r.vip, 80), true, false, 1, 0, true)
		seen[r.send(seg)]++
	}
	if len(seen) != 3 || seen[r.addr[32767]] != 0 {
		t.Fatalf("round robin over three active servers gave %v", seen)
	}
}
