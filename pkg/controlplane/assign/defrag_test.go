package assign

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

func TestDefragGolden(t *testing.T) {
	buckets := table(a, b, a, b, c, c)
	plan, err := PlanDefrag(buckets, DefragParams{Threshold: 1, TargetRate: 1, MaxMoves: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plan.Target(), []forwarding.ServerID{a, a, b, b, c, c}; !slices.Equal(got, want) {
		t.Fatalf("target %v, want %v", got, want)
	}
	ch, err := plan.Step(buckets, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []forwarding.BucketChange{
		{Index: 1, Bucket: forwarding.Bucket{Current: a, History: forwarding.Chain{b}, Changed: 5}},
		{Index: 2, Bucket: forwarding.Bucket{Current: b, History: forwarding.Chain{a}, Changed: 5}},
	}
	if !slices.Equal(ch, want) {
		t.Fatalf("step %+v, want %+v", ch, want)
	}
	apply(buckets, ch)
	if !plan.Done(buckets) {
		t.Fatal("not done after reaching the target")
	}
	if ch, err := plan.Step(buckets, 6); err != nil || ch != nil {
		t.Fatalf("step after done = %v, %v; want nothing", ch, err)
	}
}

func TestDefragPlanKeepsWellPlacedRanges(t *testing.T) {
	// c's range is already contiguous at the front and must stay there.
	buckets := table(c, c, c, a, b, a, b)
	plan, err := PlanDefrag(buckets, DefaultDefragParams)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := plan.Target(), []forwarding.ServerID{c, c, c, a, a, b, b}; !slices.Equal(got, want) {
		t.Fatalf("target %v, want %v", got, want)
	}
	if n := plan.Misplaced(buckets); n != 2 {
		t.Fatalf("misplaced %d, want 2", n)
	}
}

func TestDefragErrors(t *testing.T) {
	for _, p := range []DefragParams{{Threshold: 1, TargetRate: 0.5, MaxMoves: 1}, {Threshold: 1, TargetRate: 1.2, MaxMoves: 1}, {Threshold: 2, TargetRate: 1}} {
		if _, err := PlanDefrag(table(a), p); !errors.Is(err, ErrDefrag) {
			t.Errorf("params %+v accepted", p)
		}
	}
	if _, err := PlanDefrag(table(a, 0), DefaultDefragParams); !errors.Is(err, ErrDefrag) {
		t.Error("unowned bucket accepted")
	}
	buckets := table(a, b, a, b)
	plan, _ := PlanDefrag(buckets, DefaultDefragParams)
	buckets[0].Current = b
	if _, err := plan.Step(buckets, 1); !errors.Is(err, ErrDefrag) {
		t.Error("stale plan accepted")
	}
	if _, err := plan.Step(buckets[:3], 1); !errors.Is(err, ErrDefrag) {
		t.Error("table of another size accepted")
	}
}

// fragmented builds a table by a random sequence of rebalances, the way a
// real instance gets fragmented.
func fragmented(r *rand.Rand, n int) []forwarding.Bucket {
	buckets := make([]forwarding.Bucket, n)
	var servers []Server
	next := forwarding.MinServerID
	for step := range 12 {
		if r.IntN(3) > 0 || len(servers) < 2 {
			for range 1 + r.IntN(6) {
				servers = append(servers, Server{next, uint32(1 + r.IntN(3))})
				next++
			}
		} else {
			i := r.IntN(len(servers))
			servers = slices.Delete(servers, i, i+1)
		}
		apply(buckets, Rebalance(buckets, servers, uint32(step+1)))
	}
	return buckets
}

// TestDefragRandom checks each step of defragmentation runs: loads never
// change, no server moves more than MaxMoves buckets per step, every move
// goes to the target, fragmentation never exceeds its starting value, and
// the run ends at the target rate unless a step reports it stalled.
func TestDefragRandom(t *testing.T) {
	stalled := 0
	for seed := range uint64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 2))
			buckets := fragmented(r, 200+r.IntN(2000))
			params := DefragParams{Threshold: 2, TargetRate: 1 + r.Float64()/4, MaxMoves: 1 + r.IntN(5)}
			plan, err := PlanDefrag(buckets, params)
			if err != nil {
				t.Fatal(err)
			}
			before := Owners(buckets)
			start := Fragmentation(buckets)
			for step := 0; !plan.Done(buckets); step++ {
				if step > len(buckets) {
					t.Fatal("no progress")
				}
				ch, err := plan.Step(buckets, uint32(100+step))
				if errors.Is(err, ErrDefragStalled) {
					stalled++
					t.Logf("stalled at step %d: %v", step, err)
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(ch) == 0 {
					t.Fatal("not done, but the step moves nothing")
				}
				gave := map[forwarding.ServerID]int{}
				for _, x := range ch {
					gave[buckets[x.Index].Current]++
					if x.Bucket.Current != plan.Target()[x.Index] || x.Bucket.History[0] != buckets[x.Index].Current {
						t.Fatalf("move %+v is not toward the target", x)
					}
				}
				for id, n := range gave {
					if n > params.MaxMoves {
						t.Fatalf("server %d moved %d buckets, max %d", id, n, params.MaxMoves)
					}
				}
				apply(buckets, ch)
				if !sameCounts(before, Owners(buckets)) {
					t.Fatal("a step changed some server's load")
				}
				if f := Fragmentation(buckets); f > start {
					t.Fatalf("step %d raised fragmentation to %v, above the starting %v", step, f, start)
				}
			}
			if f := Fragmentation(buckets); f > params.TargetRate && plan.Misplaced(buckets) > 0 {
				t.Fatalf("stopped at fragmentation %v > %v", f, params.TargetRate)
			}
		})
	}
	// Stalls are the known limitation (docs/hashing.md); giving boundary
	// buckets first when cycles are formed brought them from 5 to 2 of
	// these 30 runs, and more means a regression.
	t.Logf("%d of 30 runs stalled", stalled)
	if stalled > 2 {
		t.Errorf("%d of 30 runs stalled, want at most 2", stalled)
	}
}

func sameCounts(x, y []forwarding.ServerID) bool {
	n := map[forwarding.ServerID]int{}
	for i := range x {
		n[x[i]]++
		n[y[i]]--
	}
	for _, v := range n {
		if v != 0 {
			return false
		}
	}
	return true
}

// TestDefragWorstCase starts where every bucket of a server is its own
// range, like the paper's Figure 25, and must reach one range per server.
func TestDefragWorstCase(t *testing.T) {
	const servers, per = 200, 100
	buckets := make([]forwarding.Bucket, servers*per)
	for i := range buckets {
		buckets[i].Current = forwarding.MinServerID + forwarding.ServerID(i%servers)
	}
	if f := Fragmentation(buckets); f != per {
		t.Fatalf("worst case has fragmentation %v, want %d", f, per)
	}
	plan, err := PlanDefrag(buckets, DefragParams{Threshold: 2, TargetRate: 1, MaxMoves: 10})
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	for ; !plan.Done(buckets); steps++ {
		ch, err := plan.Step(buckets, 1)
		if err != nil {
			t.Fatal(err)
		}
		apply(buckets, ch)
	}
	if f := Fragmentation(buckets); f != 1 {
		t.Fatalf("ended at fragmentation %v", f)
	}
	// Each server has about per-1 misplaced buckets; at 10 per step that is
	// at least 10 steps, and the cycle packing should not need many more.
	if steps < 10 || steps > 20 {
		t.Fatalf("took %d steps, want 10–20", steps)
	}
}
