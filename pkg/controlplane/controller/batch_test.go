package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestAddSeveralAtOnce: DIPs added in one request are recorded in one
// commit and get their shares in one generation; buckets move only from
// the old DIPs to the new ones, the oldest first; bad batches are refused
// whole; repeating the request changes nothing.
func TestAddSeveralAtOnce(t *testing.T) {
	c, root, clk := setup(t, 700, 1, 1, 1, 1)
	ctx := storetest.Context(t)
	clk.advance(time.Hour)
	// Some buckets of 1025 move now: young buckets, to be moved last.
	if err := c.SetWeight(ctx, "web", 1025, 2); err != nil {
		t.Fatal(err)
	}
	before := checkInvariants(t, root)
	young := map[int]bool{}
	for i, b := range before.Buckets {
		if b.Changed == uint32(clk.now().Unix()) {
			young[i] = true
		}
	}
	clk.advance(5 * time.Second)
	batch := []NewDIP{{1029, dipAddr(1029), 1}, {1030, dipAddr(1030), 1}, {1031, dipAddr(1031), 1}}
	bad := append(append([]NewDIP(nil), batch...), NewDIP{1032, dipAddr(1029), 1})
	if err := c.AddDIPs(ctx, "web", bad); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("batch with a duplicate address: %v", err)
	}
	if err := c.AddDIPs(ctx, "web", []NewDIP{batch[0], batch[0]}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("batch with a duplicate id: %v", err)
	}
	if v, _ := Show(ctx, shared, root, "web", clk.now()); len(v.DIPs) != 4 {
		t.Fatalf("a refused batch left %d DIPs", len(v.DIPs))
	}
	if err := c.AddDIPs(ctx, "web", batch); err != nil {
		t.Fatal(err)
	}
	after := checkInvariants(t, root)
	if after.Generation != before.Generation+1 {
		t.Fatalf("three DIPs added in %d generations, want 1", after.Generation-before.Generation)
	}
	for i := range after.Buckets {
		a, b := before.Buckets[i], after.Buckets[i]
		if a.Current == b.Current {
			continue
		}
		if b.Current < 1029 || a.Current > 1028 {
			t.Fatalf("bucket %d moved %d → %d: only old → new moves are needed", i, a.Current, b.Current)
		}
		if young[i] {
			t.Errorf("bucket %d moved 5 s after its last move while older buckets stayed", i)
		}
	}
	if err := c.AddDIPs(ctx, "web", batch); err != nil {
		t.Fatalf("repeated batch: %v", err)
	}
	if again := checkInvariants(t, root); again.Generation != after.Generation {
		t.Fatal("repeated batch published a generation")
	}
}

// TestFullHistoriesStayUntilOwnerLeaves (K = 1): buckets whose history is
// full do not move while their owner stays, even if that leaves a new
// server without its share; once the window has emptied the histories,
// reconciling completes the rebalance; an owner that leaves gives them up.
func TestFullHistoriesStayUntilOwnerLeaves(t *testing.T) {
	in := webInstance(60)
	in.MaxChainLen = 1
	c, root, clk := setupInstance(t, in, 1, 1)
	ctx := storetest.Context(t)
	clk.advance(time.Hour)
	// Drain and undrain 1025 within one window: every bucket moves once
	// (0–29 to 1026 and back is not allowed: 1026 gives back the others).
	if err := c.Drain(ctx, "web", 1025, true); err != nil {
		t.Fatal(err)
	}
	if err := c.Drain(ctx, "web", 1025, false); err != nil {
		t.Fatal(err)
	}
	before := checkInvariants(t, root)
	for i, b := range before.Buckets {
		if b.History.Len() != 1 {
			t.Fatalf("bucket %d: %+v, want every bucket moved once (full history at K=1)", i, b)
		}
	}
	if err := c.AddDIP(ctx, "web", 1027, dipAddr(1027), 1); err != nil {
		t.Fatal(err)
	}
	tab := checkOwners(t, root)
	for i, b := range tab.Buckets {
		if b != before.Buckets[i] {
			t.Fatalf("full-history bucket %d moved: %+v → %+v", i, before.Buckets[i], b)
		}
	}
	clk.advance(in.ChainWindow)
	for range 2 { // histories expire, then the rebalance completes
		if err := c.Reconcile(ctx, "web"); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(checkInvariants(t, root), 1027); n != 20 {
		t.Fatalf("1027 owns %d after the window, want 20", n)
	}
	// Fill the histories again, then remove an owner: its buckets move.
	if err := c.Drain(ctx, "web", 1027, true); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveDIP(ctx, "web", 1026); err != nil {
		t.Fatal(err)
	}
	if n := count(checkInvariants(t, root), 1026); n != 0 {
		t.Fatalf("removed 1026 still owns %d buckets", n)
	}
}

func count(t *forwarding.Table, id forwarding.ServerID) int {
	n := 0
	for _, b := range t.Buckets {
		if b.Current == id {
			n++
		}
	}
	return n
}

// checkOwners loads and validates the ring without the share invariant
// (a deliberately unfinished rebalance).
func checkOwners(t *testing.T, root string) *forwarding.Table {
	t.Helper()
	tab, err := loadTable(t, root)
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	return tab
}

func loadTable(t *testing.T, root string) (*forwarding.Table, error) {
	tab, _, err := ring.NewFollower(shared, ring.InstanceKeys(root, "web"), ring.FollowerOptions{}).Load(storetest.Context(t))
	return tab, err
}
