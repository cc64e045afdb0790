package dpbench

import (
	"math"
	"testing"
)

// TestOrderIsRandomPermutation: for every flow count the benchmark uses,
// the visiting order is a permutation, and consecutive repetitions land far
// apart (the mean distance of a random permutation is n/3; insertion order
// would give 1).
func TestOrderIsRandomPermutation(t *testing.T) {
	counts := map[uint32]bool{1: true, 2: true, 3: true, 1000: true, 1001: true, 65537: true, 100_000: true, 1 << 20: true}
	for _, o := range []Options{Full, Quick} {
		counts[uint32(o.BeamerFlows)] = true
		for _, n := range o.MaglevFlows {
			counts[uint32(n)] = true
		}
	}
	for _, o := range []LiveOptions{LiveFull, LiveQuick} {
		counts[uint32(o.Flows)] = true
	}
	for n := range counts {
		if err := checkOrder(n); err != nil {
			t.Fatal(err)
		}
		if n < 1000 {
			continue
		}
		var sum float64
		for seq := uint32(1); seq < n; seq++ {
			sum += math.Abs(float64(benchOrder(seq, n)) - float64(benchOrder(seq-1, n)))
		}
		mean := sum / float64(n-1) / float64(n)
		if mean < 0.25 || mean > 0.42 {
			t.Errorf("%d flows: consecutive repetitions are %.3f n apart on average, a random order gives 0.333", n, mean)
		}
		// A connection table's entries are allocated in fill order: flows
		// measured one after the other must lie far apart in it too.
		filled := make([]float64, n)
		for seq := range n {
			filled[keyedOrder(seq, n, fillKey)] = float64(seq)
		}
		sum = 0
		for seq := uint32(1); seq < n; seq++ {
			sum += math.Abs(filled[benchOrder(seq, n)] - filled[benchOrder(seq-1, n)])
		}
		if mean := sum / float64(n-1) / float64(n); mean < 0.25 || mean > 0.42 {
			t.Errorf("%d flows: consecutive repetitions were filled %.3f n apart on average, a random order gives 0.333", n, mean)
		}
	}
}
