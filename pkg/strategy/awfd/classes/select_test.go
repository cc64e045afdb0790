package classes

import (
	"math"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Equation 2: a server's share of new connections is its weight over the
// sum of weights. 400k hashes spread evenly over 2^32 must give each server
// its share within 1% (relative) — the multiply-shift stages are exact up
// to rounding, so a larger error is a bug, not noise.
func TestSelectProportional(t *testing.T) {
	w := []int{4, 2, 0, 2, 1, 4, 3, 3, 1}
	r, err := Build(1, 0, 4, ids(len(w)), w)
	if err != nil {
		t.Fatal(err)
	}
	const n = 400000
	got := map[forwarding.ServerID]int{}
	for i := 0; i < n; i++ {
		h := uint32(uint64(i) * (1 << 32) / n)
		got[r.Select(h)]++
	}
	sum := 0
	for _, x := range w {
		sum += x
	}
	for i, x := range w {
		id := forwarding.MinServerID + forwarding.ServerID(i)
		want := float64(n) * float64(x) / float64(sum)
		if x == 0 {
			if got[id] != 0 {
				t.Errorf("idle server %d got %d connections", id, got[id])
			}
			continue
		}
		if math.Abs(float64(got[id])-want)/want > 0.01 {
			t.Errorf("server %d (weight %d): %d connections, want %.0f", id, x, got[id], want)
		}
	}
}
