package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// fragment adds and removes DIPs until the instance is fragmented.
func fragment(t *testing.T, c *Controller, clk *clock) {
	t.Helper()
	ctx := storetest.Context(t)
	for _, id := range []forwarding.ServerID{1026, 1028, 1031} {
		if err := c.RemoveDIP(ctx, "web", id); err != nil {
			t.Fatal(err)
		}
	}
	for id := forwarding.ServerID(1040); id < 1044; id++ {
		if err := c.AddDIP(ctx, "web", id, dipAddr(id), 1); err != nil {
			t.Fatal(err)
		}
	}
	clk.advance(forwarding.DefaultChainWindow)      // rebalanced buckets leave their window
	if err := c.Reconcile(ctx, "web"); err != nil { // and removed DIPs' ids go
		t.Fatal(err)
	}
}

// TestDefragSteps: repeated steps, one per chaining window, bring a
// fragmented instance to the target rate; every step is one generation,
// keeps the balance and fragmentation below its start, and no bucket
// moves twice within its window.
func TestDefragSteps(t *testing.T) {
	c, root, clk := setup(t, 1200, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	ctx := storetest.Context(t)
	fragment(t, c, clk)
	before := checkInvariants(t, root)
	start := assign.Fragmentation(before.Buckets)
	params := assign.DefragParams{Threshold: 1.2, TargetRate: 1.05, MaxMoves: 10}
	if !params.Needed(before.Buckets) {
		t.Fatalf("test instance not fragmented: %.3f rules per DIP", start)
	}
	movedAt := map[uint32]time.Time{}
	for step := 0; ; step++ {
		if step > 50 {
			t.Fatal("no convergence in 50 steps")
		}
		res, err := c.Defrag(ctx, "web", 1, params)
		if err != nil {
			t.Fatal(err)
		}
		after := checkInvariants(t, root) // balance, ownership, records
		if res.Done {
			if res.After > params.TargetRate {
				t.Fatalf("done at %.3f", res.After)
			}
			t.Logf("%.3f → %.3f rules per DIP in %d steps", start, res.After, step)
			return
		}
		if res.Stalled != "" {
			t.Fatalf("stalled: %s", res.Stalled)
		}
		if after.Generation != before.Generation+1 || res.Steps != 1 {
			t.Fatalf("step %d published generations %d → %d", step, before.Generation, after.Generation)
		}
		if f := assign.Fragmentation(after.Buckets); f > start {
			t.Fatalf("step %d raised fragmentation from %.3f to %.3f", step, start, f)
		}
		for i := range after.Buckets {
			a, b := before.Buckets[i], after.Buckets[i]
			if a.Current == b.Current {
				continue
			}
			if b.History[0] != a.Current || b.Changed != uint32(clk.now().Unix()) {
				t.Fatalf("bucket %d moved %+v → %+v without daisy chaining", i, a, b)
			}
			if last, ok := movedAt[uint32(i)]; ok && clk.now().Sub(last) < forwarding.DefaultChainWindow {
				t.Fatalf("bucket %d moved twice within its window", i)
			}
			movedAt[uint32(i)] = clk.now()
		}
		clk.advance(time.Minute) // shorter than the window: steps must avoid chained buckets
		// Histories whose window ended are pruned by a generation of their
		// own, which Defrag's reconcile would publish: take it first.
		if err := c.Reconcile(ctx, "web"); err != nil {
			t.Fatal(err)
		}
		before = checkInvariants(t, root)
	}
}

// TestCtlDefrag runs `beamer ctl defrag` end to end: a request through the
// store to an elected controller, which answers with the figures.
func TestCtlDefrag(t *testing.T) {
	c, root, clk := setup(t, 1200, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	fragment(t, c, clk)
	ctx, cancel := context.WithCancel(storetest.Context(t))
	done := make(chan struct{})
	go func() {
		Run(ctx, shared, root, RunOptions{Options: Options{Now: clk.now}, Identity: "ctl-defrag", ReconcileEvery: time.Hour})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	p := assign.DefragParams{TargetRate: 1.05, MaxMoves: 10}
	res, err := SubmitResult(ctx, shared, root, Request{Op: OpDefrag, Instance: "web", Steps: 3, Defrag: &p}, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res, "3 defragmentation step(s)") {
		t.Fatalf("ctl defrag answered %q", res)
	}
	t.Log(res)
	checkInvariants(t, root)
	bad := []Request{
		{Op: OpDefrag, Instance: "web", Steps: 0, Defrag: &p},
		{Op: OpDefrag, Instance: "web", Steps: 1, Defrag: &assign.DefragParams{TargetRate: 0.5, MaxMoves: 1}},
		{Op: OpDefrag, Instance: "nope", Steps: 1, Defrag: &p},
	}
	for _, r := range bad {
		if _, err := SubmitResult(ctx, shared, root, r, 20*time.Second); err == nil {
			t.Errorf("%+v accepted", r)
		} else {
			t.Log(err)
		}
	}
}
