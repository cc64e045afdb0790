package controller

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

var shared store.Store

func TestMain(m *testing.M) { os.Exit(storetest.MainWithEmbedded(m, &shared)) }

var rootSeq atomic.Int64

func newRoot() string { return fmt.Sprintf("/ctltest%d", rootSeq.Add(1)) }

func webInstance(buckets uint32) *forwarding.Instance {
	return &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("192.0.2.1")},
		PortLow: 80, PortHigh: 80, Buckets: buckets, ChainWindow: forwarding.DefaultChainWindow}
}

func dipAddr(id forwarding.ServerID) netip.Addr {
	return netip.AddrFrom4([4]byte{10, 0, byte(id >> 8), byte(id)})
}

// clock is a settable time source.
type clock struct{ t atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(c.t.Load(), 0) }
func (c *clock) advance(d time.Duration) { c.t.Add(int64(d / time.Second)) }

func newClock() *clock { c := &clock{}; c.t.Store(1_700_000_000); return c }

// setup creates an instance with the given DIP weights (ids 1025…).
func setup(t *testing.T, buckets uint32, weights ...uint32) (*Controller, string, *clock) {
	return setupInstance(t, webInstance(buckets), weights...)
}

func setupInstance(t *testing.T, in *forwarding.Instance, weights ...uint32) (*Controller, string, *clock) {
	t.Helper()
	root, clk := newRoot(), newClock()
	c := New(shared, root, Options{Now: clk.now})
	ctx := storetest.Context(t)
	if err := c.CreateInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	for i, w := range weights {
		id := forwarding.ServerID(1025 + i)
		if err := c.AddDIP(ctx, "web", id, dipAddr(id), w); err != nil {
			t.Fatal(err)
		}
	}
	return c, root, clk
}

// checkInvariants verifies what muxes and operators rely on after any
// completed operation: the ring loads and validates; every bucket is owned
// by exactly one DIP with a positive effective weight; every DIP's load is
// within one bucket of its weight-proportional share; records and ring agree.
func checkInvariants(t *testing.T, root string) *forwarding.Table {
	t.Helper()
	ctx := storetest.Context(t)
	k := ring.InstanceKeys(root, "web")
	tab, _, err := ring.NewFollower(shared, k, ring.FollowerOptions{}).Load(ctx)
	if err != nil {
		t.Fatalf("mux cold start: %v", err)
	}
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	dips, err := readDIPs(ctx, shared, k)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := readIDs(ctx, shared, k)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ring.ReadInstance(ctx, shared, k)
	if err != nil {
		t.Fatal(err)
	}
	var total uint64
	owned := map[forwarding.ServerID]int{}
	for _, b := range tab.Buckets {
		owned[b.Current]++
	}
	for id, d := range dips {
		total += uint64(d.EffectiveWeight())
		if d.State == Adding {
			t.Errorf("DIP %d still adding after a completed operation", id)
		}
		if d.State == Removing {
			t.Errorf("DIP %d still removing after a completed operation", id)
		}
		want := forwarding.Active
		if d.Down && cfg.Strategy == forwarding.StrategyMaglev {
			want = forwarding.Down // muxes drop the connections they remember for it
		}
		if s, ok := tab.Servers[id]; !ok || s.State != want || s.Addr != d.Addr {
			t.Errorf("DIP %d: ring has %+v (present %v), want %v", id, s, ok, want)
		}
		if r, ok := ids[id]; !ok || r.Addr != d.Addr || r.State != "active" {
			t.Errorf("DIP %d: id record %+v (present %v)", id, r, ok)
		}
	}
	for id, s := range tab.Servers {
		if r, ok := ids[id]; !ok || r.Addr != s.Addr {
			t.Errorf("ring server %d has id record %+v (present %v)", id, r, ok)
		}
	}
	for id := range ids {
		if _, ok := tab.Servers[id]; !ok {
			t.Errorf("id record %d for a server not in the ring", id)
		}
	}
	// Stable hashing gives every DIP its integer share; Maglev's turns
	// leave a backend within a couple of entries of it.
	tolerance := 1.0
	if cfg.Strategy == forwarding.StrategyMaglev {
		tolerance = 2.5
		checkMaglevTable(t, tab, dips)
	}
	n := float64(len(tab.Buckets))
	for id, cnt := range owned {
		if id == forwarding.NoServer {
			if total > 0 {
				t.Errorf("%d buckets unowned while DIPs have weight", cnt)
			}
			continue
		}
		d, ok := dips[id]
		if !ok || d.EffectiveWeight() == 0 {
			t.Errorf("server %d owns %d buckets without a live DIP", id, cnt)
			continue
		}
	}
	for id, d := range dips {
		if total == 0 {
			break
		}
		share := n * float64(d.EffectiveWeight()) / float64(total)
		if math.Abs(float64(owned[id])-share) >= tolerance {
			t.Errorf("DIP %d (weight %d) owns %d buckets, share %.2f", id, d.EffectiveWeight(), owned[id], share)
		}
	}
	return tab
}

func TestAssignmentInvariants(t *testing.T) {
	c, root, _ := setup(t, 1000, 1, 2, 3, 5, 7)
	ctx := storetest.Context(t)
	k := ring.InstanceKeys(root, "web")
	runSteps(t, root, operationSteps(ctx, c), func(name string, before, after *forwarding.Table) {
		// Only moved buckets change, and a moved bucket records its previous
		// owner and the time.
		for i := range after.Buckets {
			a, b := before.Buckets[i], after.Buckets[i]
			if a.Current != b.Current && b.Current != forwarding.NoServer && b.History[0] != a.Current && !downOrNone(t, k, a.Current) {
				t.Fatalf("%s: bucket %d moved %d → %d with previous %d", name, i, a.Current, b.Current, b.History[0])
			}
		}
	})
}

// runSteps performs each operation, checks the invariants hold after it and
// that it published exactly one generation, then hands the tables before and
// after to check. It returns the last table.
func runSteps(t *testing.T, root string, steps []opStep, check func(name string, before, after *forwarding.Table)) *forwarding.Table {
	t.Helper()
	before := checkInvariants(t, root)
	for _, s := range steps {
		if err := s.op(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		after := checkInvariants(t, root)
		if after.Generation != before.Generation+1 {
			t.Fatalf("%s: generation %d → %d, want one generation per operation", s.name, before.Generation, after.Generation)
		}
		check(s.name, before, after)
		before = after
	}
	return before
}

func downOrNone(t *testing.T, k ring.Keys, id forwarding.ServerID) bool {
	if id == forwarding.NoServer {
		return true
	}
	dips, _ := readDIPs(storetest.Context(t), shared, k)
	d, ok := dips[id]
	return ok && d.Down
}

// TestDownDIPChainedToLast: a DIP that fails its health checks owns no
// bucket, and stays in the histories of the buckets it had (it may still
// run and hold connections), behind every running owner.
func TestDownDIPChainedToLast(t *testing.T) {
	c, root, _ := setup(t, 300, 1, 1, 1)
	ctx := storetest.Context(t)
	if err := c.SetHealth(ctx, "web", 1025, false); err != nil {
		t.Fatal(err)
	}
	tab := checkInvariants(t, root)
	named := 0
	for i, b := range tab.Buckets {
		if b.Current == 1025 {
			t.Fatalf("bucket %d still owned by the down DIP: %+v", i, b)
		}
		n := b.History.Len()
		for j, id := range b.History[:n] {
			if id == 1025 {
				named++
				if j != n-1 {
					t.Fatalf("bucket %d names the down DIP before a running owner: %+v", i, b)
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no bucket names the down DIP: its connections would break")
	}
	if err := c.SetHealth(ctx, "web", 1025, true); err != nil {
		t.Fatal(err)
	}
	tab = checkInvariants(t, root)
	n := 0
	for _, b := range tab.Buckets {
		if b.Current == 1025 {
			n++
		}
	}
	if n != 100 {
		t.Fatalf("recovered DIP got %d buckets back, want 100", n)
	}
}

func TestRemoveRetiresThenExpires(t *testing.T) {
	c, root, clk := setup(t, 300, 1, 1, 1)
	ctx := storetest.Context(t)
	k := ring.InstanceKeys(root, "web")
	if err := c.RemoveDIP(ctx, "web", 1026); err != nil {
		t.Fatal(err)
	}
	tab := checkInvariants(t, root)
	if s := tab.Servers[1026]; s.State != forwarding.Retired {
		t.Fatalf("removed DIP's server is %+v, want retired while chained to", s)
	}
	ids, _ := readIDs(ctx, shared, k)
	if ids[1026].State != "retired" {
		t.Fatalf("id record %+v", ids[1026])
	}
	// Re-adding the id with another address must wait for the window.
	if err := c.AddDIP(ctx, "web", 1026, netip.MustParseAddr("10.9.9.9"), 1); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("re-adding a chained id with a new address: %v", err)
	}
	clk.advance(forwarding.DefaultChainWindow + time.Second)
	if err := c.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	tab = checkInvariants(t, root)
	if _, ok := tab.Servers[1026]; ok {
		t.Fatal("server still in the ring after the chaining window")
	}
	for i, b := range tab.Buckets {
		if b.History[0] == 1026 {
			t.Fatalf("bucket %d still chains to the removed DIP", i)
		}
	}
	gen := tab.Generation
	if err := c.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if g := checkInvariants(t, root).Generation; g != gen {
		t.Fatalf("idle reconcile published generation %d", g)
	}
}

func TestBadRequests(t *testing.T) {
	c, _, _ := setup(t, 4, 1, 1)
	ctx := storetest.Context(t)
	cases := map[string]error{
		"unknown instance": c.AddDIP(ctx, "nope", 3000, dipAddr(3000), 1),
		"id too small":     c.AddDIP(ctx, "web", 1024, dipAddr(1024), 1),
		"duplicate id":     c.AddDIP(ctx, "web", 1025, dipAddr(3000), 1),
		"duplicate addr":   c.AddDIP(ctx, "web", 3000, dipAddr(1025), 1),
		"VIP as DIP":       c.AddDIP(ctx, "web", 3000, netip.MustParseAddr("192.0.2.1"), 1),
		"zero weight":      c.AddDIP(ctx, "web", 3000, dipAddr(3000), 0),
		"IPv6":             c.AddDIP(ctx, "web", 3000, netip.MustParseAddr("2001:db8::1"), 1),
		"unknown DIP":      c.RemoveDIP(ctx, "web", 4000),
		"weight 0":         c.SetWeight(ctx, "web", 1025, 0),
		"instance exists":  c.CreateInstance(ctx, webInstance(10)),
		"bad instance":     c.CreateInstance(ctx, &forwarding.Instance{Name: "Bad Name"}),
	}
	if err := c.AddDIP(ctx, "web", 3000, dipAddr(3000), 1); err != nil { // 3 DIPs, B=4
		t.Fatal(err)
	}
	cases["B not larger than DIP count"] = c.AddDIP(ctx, "web", 3001, dipAddr(3001), 1)
	for name, err := range cases {
		if !errors.Is(err, ErrBadRequest) && !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want a bad-request or not-found error", name, err)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if err := c.AddDIP(ctx, "web", 3000, dipAddr(3000), 1); err != nil {
		t.Fatalf("repeating an identical add: %v", err)
	}
}

// TestRemoveSeveralAtOnce: DIPs removed in one request give their buckets
// straight to the DIPs that stay, each moved bucket naming its owner before
// the request as previous owner — no bucket passes through a leaving DIP,
// which a second request would have to move again within its window.
func TestRemoveSeveralAtOnce(t *testing.T) {
	c, root, _ := setup(t, 400, 1, 1, 1, 1)
	ctx := storetest.Context(t)
	before := checkInvariants(t, root)
	gone := map[forwarding.ServerID]bool{1026: true, 1027: true}
	if err := c.RemoveDIPs(ctx, "web", []forwarding.ServerID{1026, 1027}); err != nil {
		t.Fatal(err)
	}
	after := checkInvariants(t, root)
	if after.Generation != before.Generation+1 {
		t.Errorf("removing two DIPs took generations %d → %d, want one", before.Generation, after.Generation)
	}
	for i, b := range after.Buckets {
		old := before.Buckets[i].Current
		switch {
		case gone[b.Current]:
			t.Fatalf("bucket %d still owned by removed DIP %d", i, b.Current)
		case b.Current != old && b.History[0] != old:
			t.Fatalf("bucket %d moved %d → %d but names %d as previous owner", i, old, b.Current, b.History[0])
		case b.Current != old && !gone[old]:
			t.Fatalf("bucket %d moved away from staying DIP %d", i, old)
		}
	}
	for _, bad := range [][]forwarding.ServerID{{}, {1025, 1025}, {1025, 4000}} {
		if err := c.RemoveDIPs(ctx, "web", bad); err == nil {
			t.Errorf("RemoveDIPs(%v) accepted", bad)
		}
	}
}

// opStep is one operation of the invariant tests.
type opStep struct {
	name string
	op   func() error
}

// operationSteps is every kind of operation, in an order that leaves the
// instance valid after each: on DIPs 1025–1029 created by setup.
func operationSteps(ctx context.Context, c *Controller) []opStep {
	return []opStep{
		{"add", func() error { return c.AddDIP(ctx, "web", 2000, dipAddr(2000), 4) }},
		{"weight", func() error { return c.SetWeight(ctx, "web", 1026, 9) }},
		{"drain", func() error { return c.Drain(ctx, "web", 1027, true) }},
		{"down", func() error { return c.SetHealth(ctx, "web", 1028, false) }},
		{"up", func() error { return c.SetHealth(ctx, "web", 1028, true) }},
		{"undrain", func() error { return c.Drain(ctx, "web", 1027, false) }},
		{"remove", func() error { return c.RemoveDIP(ctx, "web", 1025) }},
	}
}
