package awfdsim

import (
	"math/rand/v2"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
)

// dispatcher places new flows on one VIP's DIPs.
type dispatcher interface {
	// update: the controller's poll; avail is each DIP's available
	// capacity now.
	update(avail []float64)
	// pick a DIP for a new flow; avail is the instantaneous available
	// capacity (only the heuristic optimum may look at it).
	pick(rng *rand.Rand, avail []float64) int
}

type ecmp struct{ n int }

func (d *ecmp) update([]float64)                     {}
func (d *ecmp) pick(rng *rand.Rand, _ []float64) int { return rng.IntN(d.n) }

// weighted picks in proportion to fixed or polled weights.
type weighted struct{ cum []float64 }

func newWeighted(w []float64) *weighted {
	d := &weighted{}
	d.set(w)
	return d
}

func (d *weighted) set(w []float64) {
	d.cum = d.cum[:0]
	s := 0.0
	for _, x := range w {
		s += max(x, 0)
		d.cum = append(d.cum, s)
	}
}

func (d *weighted) pick(rng *rand.Rand, _ []float64) int {
	total := d.cum[len(d.cum)-1]
	if total <= 0 {
		return rng.IntN(len(d.cum))
	}
	i, _ := slices.BinarySearch(d.cum, rng.Float64()*total)
	return min(i, len(d.cum)-1)
}

// wcmp: weights are the DIPs' full capacities, known in advance.
type wcmp struct{ *weighted }

func (d *wcmp) update([]float64) {}

// exact: AWFD with m = ∞ — weights exactly the polled available capacity.
type exact struct{ *weighted }

func (d *exact) update(avail []float64) { d.set(avail) }

// lcf: every new flow to the DIP with the most available capacity at the
// last poll (ties: the first).
type lcf struct{ best int }

func (d *lcf) update(avail []float64)         { d.best = argmax(avail) }
func (d *lcf) pick(*rand.Rand, []float64) int { return d.best }

// optimum: the paper's heuristic — the DIP with the most available
// capacity at the flow's arrival (LCF with instantaneous updates).
type optimum struct{}

func (optimum) update([]float64)                       {}
func (optimum) pick(_ *rand.Rand, avail []float64) int { return argmax(avail) }

func argmax(a []float64) int {
	best := 0
	for i, x := range a {
		if x > a[best] {
			best = i
		}
	}
	return best
}

// awfdDispatch is the product's AWFD: quantisation, record and Algorithm 1
// of pkg/strategy/awfd/classes; an empty record falls back to equal shares as the mux does.
type awfdDispatch struct {
	m   int
	ids []forwarding.ServerID
	rec *classes.Record
	seq uint64
}

func newAWFD(m, n int) *awfdDispatch {
	d := &awfdDispatch{m: m}
	for i := range n {
		d.ids = append(d.ids, forwarding.MinServerID+forwarding.ServerID(i))
	}
	return d
}

func (d *awfdDispatch) update(avail []float64) {
	d.seq++
	rec, err := classes.Build(d.seq, 0, d.m, d.ids, classes.Weights(avail, d.m))
	if err != nil {
		panic(err) // Build of Weights' output cannot fail: a bug
	}
	d.rec = rec
}

func (d *awfdDispatch) pick(rng *rand.Rand, _ []float64) int {
	if d.rec == nil || d.rec.Empty() {
		return rng.IntN(len(d.ids))
	}
	return int(d.rec.Select(rng.Uint32()) - forwarding.MinServerID)
}
