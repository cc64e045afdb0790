package awfdsim

import (
	"math"
	"math/rand/v2"
)

// flow is one connection of the trace.
type flow struct {
	start, end float64 // seconds
	rate       float64 // asked rate, KB/s
	chain      []int   // VIPs traversed
}

// trace draws the flows of one seed (shared by every scheme: common random
// numbers, so schemes differ by their decisions only).
func trace(c Config, seed uint64) []flow {
	rng := rand.New(rand.NewPCG(seed, 0x5f0a1e))
	xm := c.MeanRate * (c.Alpha - 1) / c.Alpha // Pareto scale for the mean
	out := make([]flow, c.Flows)
	t := 0.0
	for i := range out {
		t += rng.ExpFloat64() * c.MeanGap.Seconds()
		life := rng.ExpFloat64() * c.MeanLife.Seconds()
		u := 1 - rng.Float64() // (0, 1]
		rate := xm / math.Pow(u, 1/c.Alpha)
		n := 1 + rng.IntN(min(4, c.VIPs))
		out[i] = flow{start: t, end: t + life, rate: rate, chain: rng.Perm(c.VIPs)[:n]}
	}
	return out
}

// capacities: per VIP, DIPs alternate between c and 2c, c set so that the
// mean demand on a VIP is Overload times its capacity.
func capacities(c Config) [][]float64 {
	meanChain := float64(1+min(4, c.VIPs)) / 2
	concurrent := c.MeanLife.Seconds() / c.MeanGap.Seconds()
	perVIP := concurrent * c.MeanRate * meanChain / float64(c.VIPs)
	// Σ capacity = n/2·c + n/2·2c = 1.5·n·c
	unit := perVIP / c.Overload / (1.5 * float64(c.DIPsPerVIP))
	out := make([][]float64, c.VIPs)
	for v := range out {
		out[v] = make([]float64, c.DIPsPerVIP)
		for i := range out[v] {
			out[v][i] = unit * float64(1+i%2)
		}
	}
	return out
}
