package lab

import (
	"fmt"
	"time"
)

// The Cheetah flow-completion-time experiment (issue 13, beside the Cheetah
// paper's FCT comparison): servers of equal capacity (tbf on their links,
// so a server's link, not the shared CPU, is the bottleneck a better
// spread relieves), open-loop HTTP downloads of heavy-tailed Pareto sizes
// at Poisson times near the pool's capacity (the AWFD experiment's
// workload, awfd_flows.go), one fresh lab per run. Variants: Cheetah with
// round robin, with hashing (the Beamer bucket), with power of two choices
// over the loads the controller publishes, and Beamer itself.

// CheetahFCTVariants are the compared configurations.
func CheetahFCTVariants() []AWFDVariant {
	return []AWFDVariant{
		{Name: "cheetah rr", Strategy: "cheetah"},
		{Name: "cheetah hash", Strategy: "cheetah-hash"},
		{Name: "cheetah p2c", Strategy: "cheetah-p2c"},
		{Name: "beamer", Strategy: "beamer"},
	}
}

// CheetahFCTShape is the experiment at a size: paper = 4 servers at 30
// Mbit/s each, 2 muxes, 2 clients, load 0.9, sizes Pareto α=1.5 with mean
// 256 KiB (capped at 32 MiB), 3 repetitions of 30 s per variant; ci = 2
// servers, 1 mux, one 8 s repetition.
func CheetahFCTShape(size string) (AWFDExperiment, error) {
	e := AWFDExperiment{Servers: 4, Muxes: 2, Clients: 2, Rates: []float64{30e6}, Load: 0.9, Reps: 3,
		Flow:     FlowOptions{Duration: 30 * time.Second, MeanSize: 256 << 10, Alpha: 1.5, MaxSize: 32 << 20, Seed: 1},
		Variants: CheetahFCTVariants()}
	switch size {
	case SizePaper:
	case SizeCI:
		e.Servers, e.Muxes, e.Clients, e.Reps, e.Flow.Duration = 2, 1, 1, 1, 8*time.Second
	default:
		return e, fmt.Errorf("size %q: want %s or %s", size, SizePaper, SizeCI)
	}
	return e, nil
}
