package classes

import (
	"math"
	"slices"
	"testing"
)

// The paper's example (Fig. 3, §III-B1): available 2, 1, 0, 0 with m = 2
// gives weights 2, 1, 0, 0; m = 1 is LCF (only the best server); garbage
// (NaN, ±Inf, negative) counts as no capacity.
func TestWeights(t *testing.T) {
	cases := []struct {
		avail []float64
		m     int
		want  []int
	}{
		{[]float64{2, 1, 0, 0}, 2, []int{2, 1, 0, 0}},
		{[]float64{2, 1, 0, 0}, 1, []int{1, 0, 0, 0}},
		{[]float64{2, 1, 0, 0}, 4, []int{4, 2, 0, 0}},
		{[]float64{10, 7.4, 7.5, 2.49, 2.5}, 4, []int{4, 2, 3, 0, 1}},
		{[]float64{3, 3, 3}, 16, []int{16, 16, 16}},
		{[]float64{0, 0}, 4, []int{0, 0}},
		{[]float64{math.NaN(), math.Inf(1), -5, 1}, 4, []int{0, 0, 0, 4}},
		{nil, 4, []int{}},
	}
	for _, c := range cases {
		if got := Weights(c.avail, c.m); !slices.Equal(got, c.want) {
			t.Errorf("Weights(%v, %d) = %v, want %v", c.avail, c.m, got, c.want)
		}
	}
}
