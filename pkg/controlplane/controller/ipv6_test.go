package controller

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestIPv6Instance: an IPv6 instance in GUE goes through the controller as
// an IPv4 one does — DIPs added, one removed while it still owns buckets'
// histories — and a mux starting cold loads a valid table whose servers
// carry their IPv6 addresses, the retired one included (it is still
// chained to). An IPv4 DIP in it is refused and changes nothing.
func TestIPv6Instance(t *testing.T) {
	root := newRoot()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Run(ctx, shared, root, RunOptions{Identity: "v6", ReconcileEvery: time.Hour}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	tctx := storetest.Context(t)
	submit := func(r Request) error { return Submit(tctx, shared, root, r, 20*time.Second) }
	ip := netip.MustParseAddr
	in := &forwarding.Instance{Name: "web6", Strategy: forwarding.StrategyBeamer, Encap: forwarding.EncapGUE,
		VIPs: []netip.Addr{ip("2001:db8:100::1")}, PortLow: 80, PortHigh: 80, Buckets: 100, ChainWindow: forwarding.DefaultChainWindow}
	for _, r := range []Request{
		{Op: OpCreateInstance, Config: in},
		{Op: OpAddDIP, Instance: "web6", DIPs: []NewDIP{{ID: 1025, Addr: ip("2001:db8::10"), Weight: 1}, {ID: 1026, Addr: ip("2001:db8::11"), Weight: 1}}},
		{Op: OpAddDIP, Instance: "web6", ID: 1027, Addr: ip("2001:db8::12"), Weight: 2},
		{Op: OpRemoveDIP, Instance: "web6", ID: 1025},
	} {
		if err := submit(r); err != nil {
			t.Fatalf("%s: %v", r.Op, err)
		}
	}
	err := submit(Request{Op: OpAddDIP, Instance: "web6", ID: 1030, Addr: ip("198.18.0.10"), Weight: 1})
	if want := `bad request: DIP address 198.18.0.10 is IPv4 but instance "web6" is IPv6: an instance's VIPs and servers share one family (direct server return answers from the VIP over the server's own routes)`; err == nil || err.Error() != want {
		t.Fatalf("IPv4 DIP in an IPv6 instance:\n got %v\nwant %s", err, want)
	}
	k := ring.InstanceKeys(root, "web6")
	tab, _, err := ring.NewFollower(shared, k, ring.FollowerOptions{}).Load(tctx)
	if err != nil {
		t.Fatalf("mux cold start: %v", err)
	}
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	want := map[forwarding.ServerID]string{1025: "2001:db8::10", 1026: "2001:db8::11", 1027: "2001:db8::12"}
	owners := map[forwarding.ServerID]int{}
	for _, b := range tab.Buckets {
		owners[b.Current]++
	}
	for id, a := range want {
		if s, ok := tab.Servers[id]; !ok || s.Addr != ip(a) {
			t.Errorf("server %d: %+v, want %s", id, s, a)
		}
	}
	if tab.Servers[1025].State != forwarding.Retired || owners[1025] != 0 || owners[1026] == 0 || owners[1027] <= owners[1026] {
		t.Errorf("owners %v, 1025 %v: want 1025 retired and owning nothing, 1027 (weight 2) owning most", owners, tab.Servers[1025].State)
	}
	cfg, err := ring.ReadInstance(tctx, shared, k)
	if err != nil || cfg.Family() != forwarding.IPv6 || cfg.Encap != forwarding.EncapGUE {
		t.Fatalf("stored instance: %+v, %v", cfg, err)
	}
}
