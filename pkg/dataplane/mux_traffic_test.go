package dataplane

import (
	"net/netip"
	"reflect"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// trafficWant is what the per-VIP and per-server counters must say after
// a test sent its packets, tallied from what the scenario makes of each.
type trafficWant struct {
	vips    map[netip.Addr]*MuxVIPTraffic
	servers map[forwarding.ServerID]*MuxServerTraffic
}

func newTrafficWant(instance string, vips []netip.Addr, servers map[forwarding.ServerID]forwarding.Server) *trafficWant {
	w := &trafficWant{vips: map[netip.Addr]*MuxVIPTraffic{}, servers: map[forwarding.ServerID]*MuxServerTraffic{}}
	for _, v := range vips {
		w.vips[v] = &MuxVIPTraffic{Instance: instance, VIP: v}
	}
	for id, s := range servers {
		w.servers[id] = &MuxServerTraffic{Instance: instance, ID: id, Addr: s.Addr}
	}
	return w
}

// forwarded: a packet of bytes to vip went to server; syn: a new flow.
func (w *trafficWant) forwarded(vip netip.Addr, server forwarding.ServerID, bytes int, syn bool) {
	v := w.vips[vip]
	v.Packets++
	v.Bytes += uint64(bytes)
	if syn {
		v.NewFlows++
	}
	w.servers[server].Packets++
	w.servers[server].Bytes += uint64(bytes)
}

func (w *trafficWant) dropped(vip netip.Addr, reason string) {
	v := w.vips[vip]
	if v.Drops == nil {
		v.Drops = map[string]uint64{}
	}
	v.Drops[reason]++
}

// check compares the mux's counters with the tally, exactly.
func (w *trafficWant) check(t *testing.T, m *Mux) {
	t.Helper()
	vips, servers, err := m.Traffic()
	must(t, err)
	if len(vips) != len(w.vips) {
		t.Errorf("traffic of %d VIPs, want %d: %+v", len(vips), len(w.vips), vips)
	}
	for _, got := range vips {
		want := w.vips[got.VIP]
		if want == nil || !reflect.DeepEqual(got, *want) {
			t.Errorf("VIP %v: counted %+v, sent %+v", got.VIP, got, want)
		}
	}
	if len(servers) != len(w.servers) {
		t.Errorf("traffic of %d servers, want %d: %+v", len(servers), len(w.servers), servers)
	}
	for _, got := range servers {
		want := w.servers[got.ID]
		if want == nil || got != *want {
			t.Errorf("server %d: counted %+v, sent %+v", got.ID, got, want)
		}
	}
}

// TestMuxTrafficCounters sends TCP (SYNs and not), UDP and MPTCP subflow
// packets to both VIPs of the vectors' scenario — to owned buckets of
// servers reachable directly, through a gateway and on another interface,
// to a bucket without owner, to owners without neighbour or route, and to
// closed ports — through the production XDP program, and checks that the
// per-VIP and per-server counters equal exactly what was sent; then that a
// VIP removed and published again starts from 0.
func TestMuxTrafficCounters(t *testing.T) {
	v, m := loadVectorMux(t)
	bench := newMuxBench(t, &v.Mux)
	table, err := v.Mux.Table()
	must(t, err)
	fate := map[netip.Addr]string{}
	for _, h := range v.Mux.NextHops {
		fate[h.Addr] = h.Result
	}
	want := newTrafficWant("web", v.Mux.Instance.VIPs, table.Servers)
	client := netip.MustParseAddr("198.18.50.7")

	// send runs ip (an IPv4 packet) to vip; server is where the scenario
	// sends it (0: no owner), or closed for a port the VIP does not serve.
	send := func(vip netip.Addr, ip []byte, server forwarding.ServerID, closed, syn bool) {
		t.Helper()
		action, _ := runXDP(t, bench.ns, bench.ifindex, m.Program(), wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, ip))
		switch {
		case closed:
			want.dropped(vip, "closed_port")
		case server == 0:
			want.dropped(vip, "no_owner")
		case fate[table.Servers[server].Addr] == "tx" || fate[table.Servers[server].Addr] == "redirect":
			want.forwarded(vip, server, len(ip), syn)
			if action != fate[table.Servers[server].Addr] {
				t.Fatalf("packet to %v for server %d: %s, want %s", vip, server, action, fate[table.Servers[server].Addr])
			}
			return
		default:
			want.dropped(vip, fate[table.Servers[server].Addr])
		}
		if action != "drop" {
			t.Fatalf("packet to %v (server %d, closed %v): %s, want drop", vip, server, closed, action)
		}
	}
	// dropOnly runs ip to vip, which the mux drops for reason before any
	// decision.
	dropOnly := func(vip netip.Addr, ip []byte, reason string) {
		t.Helper()
		if action, _ := runXDP(t, bench.ns, bench.ifindex, m.Program(), wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, ip)); action != "drop" {
			t.Fatalf("%s packet to %v: %s, want drop", reason, vip, action)
		}
		want.dropped(vip, reason)
	}
	owner := func(f wire.Flow) forwarding.ServerID {
		return table.Buckets[f.Bucket(uint32(len(table.Buckets)))].Current
	}

	sent := 0
	for i, vip := range v.Mux.Instance.VIPs {
		for p := range 96 + 32*i { // the VIPs get different amounts
			f := wire.Flow{Src: client, Dst: vip, SrcPort: uint16(40000 + p), DstPort: 80, Proto: 6}
			flags := wiretest.ACK
			if p%3 == 0 {
				flags = wiretest.SYN
			}
			ip := wiretest.Segment{Flow: f, Flags: flags, Payload: make([]byte, p%61)}.IPv4()
			send(vip, ip, owner(f), false, flags == wiretest.SYN)
			sent++
		}
		for p := range 20 {
			f := wire.Flow{Src: client, Dst: vip, SrcPort: uint16(50000 + p), DstPort: 53, Proto: 17}
			send(vip, wiretest.Datagram{Flow: f, Payload: make([]byte, 10+p)}.IPv4(), owner(f), false, false)
		}
		for id := forwarding.ServerID(1025); id <= 1030; id++ { // MPTCP subflows by server id
			f := wire.Flow{Src: client, Dst: vip, SrcPort: 41000, DstPort: uint16(id), Proto: 6}
			send(vip, wiretest.Segment{Flow: f, Flags: wiretest.ACK}.IPv4(), id, false, false)
		}
		for p := range 5 + i {
			f := wire.Flow{Src: client, Dst: vip, SrcPort: uint16(42000 + p), DstPort: 9999, Proto: 6}
			send(vip, wiretest.Segment{Flow: f, Flags: wiretest.SYN}.IPv4(), 0, true, false)
		}
		// Drops before the decision (a fragment, an ICMP message the mux
		// neither answers nor steers): counted for the VIP of their own
		// packet, the VIPs interleaved.
		for p := range 3 + i {
			f := wire.Flow{Src: client, Dst: vip, SrcPort: uint16(43000 + p), DstPort: 80, Proto: 6}
			frag := wiretest.Segment{Flow: f, Flags: wiretest.ACK}.IPv4()
			frag[6] |= 0x20 // more fragments
			dropOnly(vip, frag, "fragment")
			dropOnly(v.Mux.Instance.VIPs[0], wiretest.ICMPv4(client, v.Mux.Instance.VIPs[0], 13, 0, [4]byte{}, make([]byte, 12)), "icmp")
		}
	}
	for _, w := range want.vips {
		if w.Drops["no_owner"] == 0 || w.Drops["no_neigh"] == 0 || w.NewFlows == 0 {
			t.Fatalf("the flows chosen miss a case: %+v", w)
		}
	}
	want.check(t, m)

	st := m.State()
	if len(st) != 1 || st[0].Unowned != 1 {
		t.Errorf("unowned buckets %+v, want 1 (bucket 6)", st)
	}
	if u := m.Unowned(); u["web"] != 1 || len(u) != 1 {
		t.Errorf("unowned buckets %v, want web: 1", u)
	}

	// Removed and published again: the counters start from 0.
	must(t, m.RemoveInstance("web"))
	must(t, m.SetInstance(v.Mux.Instance, table))
	newTrafficWant("web", v.Mux.Instance.VIPs, table.Servers).check(t, m)
}

// TestMuxTraffic6Counters does the same on the IPv6 path: two VIPs of one
// instance, a bucket without owner, owners without neighbour or route, a
// closed port, a subflow by server id and QUIC-less UDP.
func TestMuxTraffic6Counters(t *testing.T) {
	m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
	vip2 := netip.MustParseAddr("2001:db8:100::5")
	in := mux6Instance()
	in.VIPs = append(in.VIPs, vip2)
	table := mux6Table()
	table.Buckets[3] = forwarding.Bucket{} // no owner
	must(t, m.SetInstance(in, table))
	fate := map[forwarding.ServerID]string{1025: "tx", 1026: "tx", 1027: "tx", 1028: "no_neigh", 1029: "no_route", 1030: "tx"}
	want := newTrafficWant("v6", in.VIPs, table.Servers)

	send := func(vip netip.Addr, frame []byte, server forwarding.ServerID, closed, syn bool) {
		t.Helper()
		action, _ := runXDP(t, b.ns, b.ifindex, m.Program(), frame)
		wantAction := "drop"
		switch {
		case closed:
			want.dropped(vip, "closed_port")
		case server == 0:
			want.dropped(vip, "no_owner")
		case fate[server] == "tx":
			want.forwarded(vip, server, len(frame)-14, syn)
			wantAction = "tx"
		default:
			want.dropped(vip, fate[server])
		}
		if action != wantAction {
			t.Fatalf("packet to %v (server %d, closed %v): %s, want %s", vip, server, closed, action, wantAction)
		}
	}
	client := mux6Client
	for i, vip := range in.VIPs {
		for p := range 64 + 16*i {
			f := wire.Flow{Src: client, Dst: vip, SrcPort: uint16(40000 + p), DstPort: 80, Proto: 6}
			var flags uint8 = 0x10
			if p%4 == 0 {
				flags = 0x02
			}
			fr := pkt6{src: client, dst: vip, proto: 6, sport: f.SrcPort, dport: 80, flags: flags, payload: make([]byte, p%37)}
			send(vip, fr.frame(), table.Buckets[f.Bucket(mux6Buckets)].Current, false, flags == 0x02)
		}
		for p := range 12 {
			f := wire.Flow{Src: client, Dst: vip, SrcPort: uint16(50000 + p), DstPort: 53, Proto: 17}
			fr := pkt6{src: client, dst: vip, proto: 17, sport: f.SrcPort, dport: 53, payload: make([]byte, 5+p)}
			send(vip, fr.frame(), table.Buckets[f.Bucket(mux6Buckets)].Current, false, false)
		}
		sub := pkt6{src: client, dst: vip, proto: 6, sport: 41000, dport: 1026, flags: 0x10}
		send(vip, sub.frame(), 1026, false, false)
		for p := range 3 + i {
			fr := pkt6{src: client, dst: vip, proto: 6, sport: uint16(42000 + p), dport: 22, flags: 0x02}
			send(vip, fr.frame(), 0, true, false)
		}
	}
	for _, w := range want.vips {
		if w.Drops["no_owner"] == 0 || w.Drops["no_neigh"] == 0 || w.Drops["no_route"] == 0 || w.NewFlows == 0 {
			t.Fatalf("the flows chosen miss a case: %+v", w)
		}
	}
	want.check(t, m)
	if st := m.State(); len(st) != 1 || st[0].Unowned != 1 {
		t.Errorf("unowned buckets %+v, want 1 (bucket 3)", st)
	}
	if u := m.Unowned(); u["v6"] != 1 || len(u) != 1 {
		t.Errorf("unowned buckets %v, want v6: 1", u)
	}
}

// TestStatSlotsReuse: a slot given back is handed out again only after a
// grace period, and zeroed: its next owner never sees the old counts.
func TestStatSlotsReuse(t *testing.T) {
	netlabtest.RequireRoot(t)
	cpus, err := ebpf.PossibleCPU()
	must(t, err)
	arr, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 16, MaxEntries: 2})
	must(t, err)
	defer arr.Close()
	s := newStatSlots(arr, 2, make([]muxServerTraffic, cpus))
	graces := 0
	s.grace = func() error { graces++; return nil }
	a, err := s.take()
	must(t, err)
	b, err := s.take()
	must(t, err)
	if a == 0 || b == 0 || a == b {
		t.Fatalf("slots %d, %d: want two distinct", a, b)
	}
	dirty := make([]muxServerTraffic, cpus)
	for i := range dirty {
		dirty[i] = muxServerTraffic{Packets: 7, Bytes: 700}
	}
	must(t, arr.Put(uint32(a-1), dirty))
	if c, err := s.take(); err != nil || c != 0 {
		t.Fatalf("a third slot of two: %d, %v; want 0 (not counted)", c, err)
	}
	s.give(a)
	if graces != 0 {
		t.Fatal("a grace period waited before any slot was needed")
	}
	c, err := s.take()
	must(t, err)
	if c != a || graces != 1 {
		t.Fatalf("reused slot %d after %d grace periods, want %d after 1", c, graces, a)
	}
	var got []muxServerTraffic
	must(t, arr.Lookup(uint32(c-1), &got))
	for cpu, v := range got {
		if v != (muxServerTraffic{}) {
			t.Errorf("reused slot on CPU %d holds %+v, want zero", cpu, v)
		}
	}
}
