package awfdsim

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"time"
)

// scheme makes one dispatcher per VIP.
type scheme struct {
	name     string
	interval time.Duration // between polls (0: none)
	make     func(caps []float64) dispatcher
}

type departure struct {
	at   float64
	rate float64
	dips []int // per chain hop: the DIP, with chain giving the VIP
	f    *flow
}

type depHeap []departure

func (h depHeap) Len() int           { return len(h) }
func (h depHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h depHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *depHeap) Push(x any)        { *h = append(*h, x.(departure)) }
func (h *depHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// run simulates one scheme over one trace and returns Ω (mean over VIPs).
func run(c Config, flows []flow, caps [][]float64, s scheme, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, 0xd15a7c4))
	nv := len(caps)
	demand := make([][]float64, nv)
	avail := make([][]float64, nv)
	carried := make([]float64, nv) // Σ min(demand, capacity) per VIP
	total := make([]float64, nv)
	disp := make([]dispatcher, nv)
	for v := range caps {
		demand[v] = make([]float64, len(caps[v]))
		avail[v] = append([]float64(nil), caps[v]...)
		for _, x := range caps[v] {
			total[v] += x
		}
		disp[v] = s.make(caps[v])
		disp[v].update(avail[v])
	}
	change := func(v, i int, delta float64) {
		before := math.Min(demand[v][i], caps[v][i])
		demand[v][i] += delta
		if demand[v][i] < 1e-9 {
			demand[v][i] = 0
		}
		carried[v] += math.Min(demand[v][i], caps[v][i]) - before
		avail[v][i] = math.Max(caps[v][i]-demand[v][i], 0)
	}
	from, to := c.Warmup.Seconds(), flows[len(flows)-1].start
	integral := make([]float64, nv)
	now := 0.0
	advance := func(t float64) {
		lo, hi := math.Max(now, from), math.Min(t, to)
		if hi > lo {
			for v := range carried {
				integral[v] += carried[v] * (hi - lo)
			}
		}
		now = t
	}
	step := s.interval.Seconds()
	nextPoll := step
	poll := func(t float64) {
		for step > 0 && nextPoll <= t {
			advance(nextPoll)
			for v := range disp {
				disp[v].update(avail[v])
			}
			nextPoll += step
		}
	}
	var deps depHeap
	depart := func(t float64) {
		for deps.Len() > 0 && deps[0].at <= t {
			d := heap.Pop(&deps).(departure)
			poll(d.at)
			advance(d.at)
			for h, v := range d.f.chain {
				change(v, d.dips[h], -d.rate)
			}
		}
	}
	for fi := range flows {
		f := &flows[fi]
		depart(f.start)
		poll(f.start)
		advance(f.start)
		dips := make([]int, len(f.chain))
		for h, v := range f.chain {
			i := disp[v].pick(rng, avail[v])
			dips[h] = i
			change(v, i, f.rate)
		}
		heap.Push(&deps, departure{at: f.end, rate: f.rate, dips: dips, f: f})
	}
	omega := 0.0
	for v := range integral {
		omega += integral[v] / (to - from) / total[v]
	}
	return omega / float64(nv)
}
