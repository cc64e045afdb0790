package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/beamer-lb/beamer/research/lab"
	"github.com/spf13/cobra"
)

// `beamer-lab lab cheetah-fct`: p99 flow completion time of Cheetah's policies
// (round robin, hash, p2c) and Beamer with heavy-tailed file sizes
// (research/lab/cheetah_fct.go, docs/strategy-cheetah.md).
func labCheetahFCTCmd() *cobra.Command {
	var (
		size, out string
		reps      int
		load      float64
		duration  time.Duration
		only      []string
	)
	cmd := &cobra.Command{
		Use:   "cheetah-fct",
		Short: "Cheetah's FCT experiment: round robin vs hash (and p2c, Beamer) with heavy-tailed downloads on servers of equal capacity",
		Long: `Servers of equal capacity (tbf 30 Mbit/s each), HTTP downloads of Pareto (α=1.5,
mean 256 KiB) sizes at Poisson times at 90% of the pool's capacity, one fresh lab
per run: throughput, mean and p99 flow completion time of the cheetah strategy with
round robin, hash and power of two choices, and of Beamer. See docs/strategy-cheetah.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := lab.CheetahFCTShape(size)
			if err != nil {
				return err
			}
			if reps > 0 {
				e.Reps = reps
			}
			if duration > 0 {
				e.Flow.Duration = duration
			}
			if load > 0 {
				if load > 1.2 {
					return fmt.Errorf("--load %.2f: at most 1.2 of the pool's capacity", load)
				}
				e.Load = load
			}
			if len(only) > 0 {
				var keep []lab.AWFDVariant
				for _, v := range e.Variants {
					if slices.Contains(only, v.Name) {
						keep = append(keep, v)
					}
				}
				if len(keep) == 0 {
					return fmt.Errorf("--only %v names no variant", only)
				}
				e.Variants = keep
			}
			if e.Beamer, err = beamerBinary(); err != nil {
				return err
			}
			e.Progress = os.Stderr
			res, err := lab.RunAWFDExperiment(cmd.Context(), e)
			if res != nil && out != "" {
				b, _ := json.MarshalIndent(res, "", "  ")
				if werr := os.WriteFile(out, b, 0o644); werr != nil && err == nil {
					err = werr
				}
			}
			if err != nil {
				return err
			}
			fmt.Printf("capacity %.0f Mbit/s, offered %.0f Mbit/s\n%-14s %16s %16s %16s %22s %7s\n", res.Capacity, res.Offered, "variant", "throughput Mb/s", "mean FCT ms", "p99 FCT ms", "p99 FCT ≤100KiB ms", "failed")
			for _, s := range res.Summary {
				fmt.Printf("%-14s %8.1f ± %5.1f %8.0f ± %5.0f %8.0f ± %5.0f %14.0f ± %5.0f %7d\n", s.Variant.Name, s.Throughput, s.ThroughputErr, s.MeanFCT, s.MeanFCTErr, s.P99FCT, s.P99FCTErr, s.P99Short, s.P99ShortErr, s.Failed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&size, "size", lab.SizePaper, "paper (4 servers, 2 muxes, 3 × 30 s per variant) or ci (2 servers, 1 mux, 1 × 8 s)")
	f.IntVar(&reps, "reps", 0, "repetitions (default: the size's)")
	f.DurationVar(&duration, "duration", 0, "arrivals per run (default: the size's)")
	f.Float64Var(&load, "load", 0, "offered load as a share of the servers' capacity (default 0.9)")
	f.StringSliceVar(&only, "only", nil, `run only these variants (names as printed, e.g. "cheetah rr")`)
	f.StringVar(&out, "json", "", "also write every run as JSON to this file")
	return cmd
}
