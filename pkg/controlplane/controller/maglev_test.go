package controller

import (
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// maglevSize is a small prime table for tests (≥ 100 entries per backend
// for the handful of DIPs they use).
const maglevSize = 1009

func maglevInstance(size uint32) *forwarding.Instance {
	in := webInstance(size)
	in.Strategy = forwarding.StrategyMaglev
	return in
}

// checkMaglevTable: the published table is exactly the Maglev table of the
// live DIPs and their effective weights, with no daisy-chaining fields.
func checkMaglevTable(t *testing.T, tab *forwarding.Table, dips map[forwarding.ServerID]*DIP) {
	t.Helper()
	var servers []assign.Server
	for id, d := range dips {
		servers = append(servers, assign.Server{ID: id, Weight: d.EffectiveWeight()})
	}
	want, err := assign.MaglevTable(servers, uint32(len(tab.Buckets)))
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range tab.Buckets {
		if b != (forwarding.Bucket{Current: want[i]}) {
			t.Fatalf("entry %d is %+v, Maglev gives %d (and no previous owner or time)", i, b, want[i])
		}
	}
}

// recorder keeps the deltas a follower applies.
type recorder struct{ deltas []*forwarding.Delta }

func (r *recorder) ApplyDelta(d *forwarding.Delta) error { r.deltas = append(r.deltas, d); return nil }
func (r *recorder) Replace(*forwarding.Table) error      { return errors.New("unexpected resync") }

// TestMaglevInstance runs every operation on a maglev instance and checks
// after each: every entry owned by a live backend, shares near-perfect and
// exactly Maglev's, one generation per operation whose delta holds exactly
// the entries that changed, and removed backends gone from the server table.
func TestMaglevInstance(t *testing.T) {
	c, root, clk := setupInstance(t, maglevInstance(maglevSize), 1, 2, 3, 5, 7)
	ctx := storetest.Context(t)
	k := ring.InstanceKeys(root, "web")
	f := ring.NewFollower(shared, k, ring.FollowerOptions{})
	if _, _, err := f.Load(ctx); err != nil {
		t.Fatal(err)
	}
	before := runSteps(t, root, operationSteps(ctx, c), func(name string, before, after *forwarding.Table) {
		var rec recorder
		if _, err := f.CatchUp(ctx, &rec); err != nil || len(rec.deltas) != 1 {
			t.Fatalf("%s: follower caught up with %d deltas: %v", name, len(rec.deltas), err)
		}
		changed := 0
		for i := range after.Buckets {
			if after.Buckets[i] != before.Buckets[i] {
				changed++
			}
		}
		if n := len(rec.deltas[0].Buckets); n != changed {
			t.Fatalf("%s: delta carries %d entries, %d changed", name, n, changed)
		}
		for _, ch := range rec.deltas[0].Buckets {
			if before.Buckets[ch.Index] == ch.Bucket {
				t.Fatalf("%s: delta republishes unchanged entry %d", name, ch.Index)
			}
		}
		t.Logf("%s: %d of %d entries changed", name, changed, maglevSize)
	})
	if s := before.Servers[1025]; s.State != forwarding.Retired {
		t.Fatalf("removed backend is %+v in the server table, want retired: muxes drain its remembered connections", s)
	}
	if _, err := c.Defrag(ctx, "web", 1, assign.DefaultDefragParams); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("defragmenting a maglev instance: %v", err)
	}
	// After the window the id leaves the server table and is free again.
	clk.advance(forwarding.DefaultChainWindow + time.Second)
	if err := c.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if _, ok := checkInvariants(t, root).Servers[1025]; ok {
		t.Fatal("removed backend still in the server table after the window")
	}
	if err := c.AddDIP(ctx, "web", 1025, netip.MustParseAddr("10.9.9.9"), 1); err != nil {
		t.Fatalf("reusing a removed maglev backend's id: %v", err)
	}
	checkInvariants(t, root)
}

func TestMaglevTableSize(t *testing.T) {
	c, _, _ := setup(t, 10)
	ctx := storetest.Context(t)
	for _, size := range []uint32{1000, 65536, 1} {
		in := maglevInstance(size)
		in.Name = "mag"
		err := c.CreateInstance(ctx, in)
		if !errors.Is(err, ErrBadRequest) {
			t.Fatalf("maglev table of %d entries accepted: %v", size, err)
		}
		t.Log(err)
	}
	v := maglevInstance(101)
	v.Name = "small"
	v.VIPs = []netip.Addr{netip.MustParseAddr("192.0.2.2")} // one instance per VIP
	if err := c.CreateInstance(ctx, v); err != nil {
		t.Fatal(err)
	}
	for id := forwarding.ServerID(1025); id < 1027; id++ {
		if err := c.AddDIP(ctx, "small", id, dipAddr(id), 1); err != nil {
			t.Fatal(err)
		}
	}
	view, err := Show(ctx, shared, c.root, "small", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(view.Warnings) != 1 || view.EntriesPerBackend != 50.5 {
		t.Fatalf("101 entries for 2 backends: %v entries per backend, warnings %q", view.EntriesPerBackend, view.Warnings)
	}
}
