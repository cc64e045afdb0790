package cheetahsim

import (
	"container/heap"
	"math/rand/v2"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// ImbalanceRow is one point of the paper's imbalance figure: the system
// imbalance (max over servers of active / mean active), averaged over
// Samples instants of the steady state.
type ImbalanceRow struct {
	Policy    string  `json:"policy"`
	Servers   int     `json:"servers"`
	Active    int     `json:"active_connections"`
	Imbalance float64 `json:"imbalance"`
	Samples   int     `json:"samples"`
}

// policies: round robin with one counter, round robin with one counter per
// CPU (the mux's per-CPU state, packets spread over CPUs at random), and
// hashing into a Beamer table of 100 buckets per server built by the
// controller's own rebalance.
var imbalancePolicies = []string{"rr", "rr-per-cpu-4", "hash"}

// Imbalance runs every policy at every size: connections arrive at rate
// active/mean with lognormal lifetimes, for 3 mean lifetimes of warm-up and
// then samples every mean/samples.
func Imbalance(seed uint64, servers, actives []int, samples int) ([]ImbalanceRow, error) {
	var rows []ImbalanceRow
	for _, n := range servers {
		list := make([]assign.Server, n)
		for i := range list {
			list[i] = assign.Server{ID: forwarding.MinServerID + forwarding.ServerID(i), Weight: 1}
		}
		buckets := make([]forwarding.Bucket, 100*n)
		for _, c := range assign.Rebalance(buckets, list, 1) {
			buckets[c.Index] = c.Bucket
		}
		owner := make([]int, len(buckets))
		for i, b := range buckets {
			owner[i] = int(b.Current - forwarding.MinServerID)
		}
		for _, active := range actives {
			for _, p := range imbalancePolicies {
				rows = append(rows, imbalanceRun(seed, p, n, active, samples, owner))
			}
		}
	}
	return rows, nil
}

func imbalanceRun(seed uint64, policy string, n, active, samples int, owner []int) ImbalanceRow {
	r := rand.New(rand.NewPCG(seed, uint64(n*1000003+active)))
	const mean = 1.0
	rate := float64(active) / mean
	load := make([]int, n)
	var h ends
	cpus := make([]int, 4)
	next := 0
	pick := func() int {
		switch policy {
		case "rr":
			next = (next + 1) % n
			return next
		case "rr-per-cpu-4":
			c := r.IntN(len(cpus))
			cpus[c] = (cpus[c] + 1) % n
			return cpus[c]
		default:
			return owner[r.IntN(len(owner))] // a uniform 5-tuple hash lands in a uniform bucket
		}
	}
	row := ImbalanceRow{Policy: policy, Servers: n, Active: active, Samples: samples}
	t, warm := 0.0, 3*mean
	nextSample := warm
	for s := 0; s < samples; {
		t += r.ExpFloat64() / rate
		for t >= nextSample && s < samples {
			h.expire(nextSample, func(c *conn) { load[c.server]-- })
			most, total := 0, 0
			for _, l := range load {
				most = max(most, l)
				total += l
			}
			if total > 0 {
				row.Imbalance += float64(most) * float64(n) / float64(total)
			}
			s++
			nextSample += mean / float64(samples) * 4
		}
		h.expire(t, func(c *conn) { load[c.server]-- })
		c := &conn{end: t + lifetime(r, mean), server: pick()}
		load[c.server]++
		heap.Push(&h, c)
	}
	row.Imbalance /= float64(samples)
	return row
}
