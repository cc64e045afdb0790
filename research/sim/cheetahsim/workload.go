package cheetahsim

import (
	"container/heap"
	"math"
	"math/rand/v2"
)

// lifetime draws a connection's duration: lognormal with sigma 1.5 scaled to
// the given mean — heavy-tailed (a few connections live tens of times the
// mean), as web and storage traffic is.
func lifetime(r *rand.Rand, mean float64) float64 {
	const sigma = 1.5
	mu := math.Log(mean) - sigma*sigma/2
	return math.Exp(mu + sigma*r.NormFloat64())
}

// conn is one live connection.
type conn struct {
	end    float64
	bucket uint32 // hash bucket (Beamer, Maglev entry)
	server int    // where it went first
	broken bool
}

// ends is a min-heap of live connections by end time.
type ends []*conn

func (h ends) Len() int           { return len(h) }
func (h ends) Less(i, j int) bool { return h[i].end < h[j].end }
func (h ends) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *ends) Push(x any)        { *h = append(*h, x.(*conn)) }
func (h *ends) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// expire removes the connections that ended by t, calling done for each.
func (h *ends) expire(t float64, done func(*conn)) {
	for h.Len() > 0 && (*h)[0].end <= t {
		done(heap.Pop(h).(*conn))
	}
}
