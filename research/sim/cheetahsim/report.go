package cheetahsim

import (
	"fmt"
	"io"
)

// Config is the whole `beamer-lab sim cheetah` run.
type Config struct {
	PCC              PCCConfig `json:"pcc"`
	ImbalanceServers []int     `json:"imbalance_servers"`
	ImbalanceActive  []int     `json:"imbalance_active_connections"`
	ImbalanceSamples int       `json:"imbalance_samples"`
}

// Default is the paper's setting, scaled (docs/strategy-cheetah.md): the
// paper's PCC run replays a trace; here 32 servers, 20K active connections
// with heavy-tailed lifetimes of mean 10 s, 10 minutes per rate.
func Default() Config {
	return Config{
		PCC: PCCConfig{Seed: 1, Servers: 32, Active: 20000, MeanLife: 10, Duration: 600,
			PerMinute: []float64{1, 6, 30, 60, 120, 300}, ChainLen: 4, WindowSecs: 240},
		ImbalanceServers: []int{16, 32, 64},
		ImbalanceActive:  []int{20000, 50000, 100000, 200000},
		ImbalanceSamples: 40,
	}
}

// Result is what the command prints.
type Result struct {
	Config    Config         `json:"config"`
	PCC       []PCCRow       `json:"pcc"`
	Imbalance []ImbalanceRow `json:"imbalance"`
	Paper     PaperFigures   `json:"paper"`
}

// PaperFigures are the paper's numbers the rows are compared with
// (shared/papers/cheetah-notes.txt).
type PaperFigures struct {
	BeamerBrokenPctAtHighest    float64 `json:"beamer_broken_pct_at_highest_rate"`
	CheetahBrokenPct            float64 `json:"cheetah_broken_pct"`
	HashImbalanceWorseThanIdeal string  `json:"hash_imbalance"`
}

// Run runs both experiments.
func Run(c Config) (*Result, error) {
	im, err := Imbalance(c.PCC.Seed, c.ImbalanceServers, c.ImbalanceActive, c.ImbalanceSamples)
	if err != nil {
		return nil, err
	}
	return &Result{Config: c, PCC: PCC(c.PCC), Imbalance: im, Paper: PaperFigures{BeamerBrokenPctAtHighest: 1,
		HashImbalanceWorseThanIdeal: "hash-based LBs up to 30% imbalance, 40x worse than an ideal LB"}}, nil
}

// WriteText prints the two tables.
func (r *Result) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "PCC: %d servers, %d active connections (mean life %gs), %gs per rate\n",
		r.Config.PCC.Servers, r.Config.PCC.Active, r.Config.PCC.MeanLife, r.Config.PCC.Duration)
	fmt.Fprintf(w, "%-16s %10s %12s %8s %9s %10s\n", "design", "updates/m", "connections", "broken", "broken %", "by window")
	for _, p := range r.PCC {
		fmt.Fprintf(w, "%-16s %10g %12d %8d %9.3f %10d\n", p.Design, p.PerMinute, p.Connections, p.Broken, p.BrokenPct, p.BrokenByWindow)
	}
	fmt.Fprintf(w, "paper: Beamer/Faild ~%g%% at the highest rate, Cheetah 0\n\n", r.Paper.BeamerBrokenPctAtHighest)
	fmt.Fprintf(w, "Imbalance (max/mean active per server)\n%-13s %8s %8s %10s\n", "policy", "servers", "active", "imbalance")
	for _, i := range r.Imbalance {
		fmt.Fprintf(w, "%-13s %8d %8d %10.4f\n", i.Policy, i.Servers, i.Active, i.Imbalance)
	}
	return nil
}
