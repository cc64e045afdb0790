package model

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// The model decodes the shared cookie vectors as the XDP program does
// (pkg/dataplane TestCheetahMuxVectors): every echo, in both option layouts,
// reaches the server the vector names; a segment without timestamps takes
// the Beamer path; an echo naming no server is a bad cookie.
func TestCheetahModelVectors(t *testing.T) {
	vec, err := cookie.LoadVectors()
	if err != nil {
		t.Fatal(err)
	}
	vipAddr := vec.Cookies[0].VIP
	table := forwarding.NewTable(16)
	addr := map[uint16]netip.Addr{}
	for i, v := range vec.Cookies {
		a := netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + i)})
		if _, ok := addr[v.ID]; !ok {
			addr[v.ID] = a
			table.Servers[forwarding.ServerID(v.ID)] = forwarding.Server{Addr: a, State: forwarding.Active}
		}
	}
	for i := range table.Buckets {
		table.Buckets[i] = forwarding.Bucket{Current: forwarding.ServerID(vec.Cookies[0].ID)}
	}
	m := &Mux{Addr: netip.MustParseAddr("198.18.0.1"), VIPs: map[netip.Addr]*VIP{vipAddr: {
		Instance: forwarding.Instance{Name: "cz", Strategy: forwarding.StrategyCheetah, VIPs: []netip.Addr{vipAddr}, PortLow: 80, PortHigh: 443,
			Buckets: 16, Cheetah: &forwarding.CheetahOptions{Policy: forwarding.CheetahRR, Keys: cookie.Keys{Keys: vec.Cookies[0].Keys}}},
		Table: table}},
		NextHops: func(netip.Addr) NextHop { return NextHop{Result: "tx"} }}
	for _, v := range vec.Cookies {
		for _, general := range []bool{false, true} {
			seg := wiretest.TSSegment(netip.AddrPortFrom(v.Client, v.CPort), netip.AddrPortFrom(v.VIP, v.VPort), false, true, 1, v.Out, general)
			r := m.Process(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, seg))
			o, err := wire.Decapsulate(r.Output[14:])
			if r.Counter != "fwd_server_id" || err != nil || o.Dst != addr[v.ID] {
				t.Errorf("%s: %s to %v (%v), want server %d at %v", v.Name, r.Counter, o.Dst, err, v.ID, addr[v.ID])
			}
		}
	}
	plain := wiretest.Segment{Flow: wire.Flow{Src: vec.Cookies[0].Client, Dst: vipAddr, SrcPort: 999, DstPort: 80, Proto: 6}, Flags: wiretest.ACK}
	if r := m.Process(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, plain.IPv4())); r.Counter != "fwd_bucket" {
		t.Errorf("no timestamps: %s, want fwd_bucket", r.Counter)
	}
	bad := wiretest.TSSegment(netip.AddrPortFrom(vec.Cookies[0].Client, 1), netip.AddrPortFrom(vipAddr, 80), false, true, 1, 0x7f, false)
	if r := m.Process(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, bad)); r.Counter != "drop_unknown_server" {
		t.Errorf("bad cookie: %s", r.Counter)
	}
}
