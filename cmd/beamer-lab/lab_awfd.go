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

// awfdVariants are the configurations of Spotlight's Fig. 12/13 (AWFD m=2,4
// at 250 ms, 500 ms and 1 s against equal-share Beamer and Maglev) and, with
// --loss, Fig. 14 (AWFD m=4 at 250 ms losing records at the muxes).
func awfdVariants(size string, loss bool) []lab.AWFDVariant {
	var out []lab.AWFDVariant
	if loss {
		for _, p := range []float64{0, 0.1, 0.2, 0.33} {
			out = append(out, lab.AWFDVariant{Name: fmt.Sprintf("awfd m=4 250ms drop %.0f%%", 100*p), Strategy: "awfd", Classes: 4, Poll: 250 * time.Millisecond, Drop: p})
		}
		return append(out, lab.AWFDVariant{Name: "beamer (equal)", Strategy: "beamer"})
	}
	polls := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}
	ms := []int{2, 4}
	if size == lab.SizeCI {
		polls, ms = polls[:1], ms[1:]
	}
	for _, m := range ms {
		for _, p := range polls {
			out = append(out, lab.AWFDVariant{Name: fmt.Sprintf("awfd m=%d %v", m, p), Strategy: "awfd", Classes: m, Poll: p})
		}
	}
	out = append(out, lab.AWFDVariant{Name: "beamer (equal)", Strategy: "beamer"})
	if size != lab.SizeCI {
		out = append(out, lab.AWFDVariant{Name: "maglev", Strategy: "maglev"})
	}
	return out
}

// awfdShape is the experiment at a size: paper = 4 servers (40/20 Mbit/s,
// 2:1), 2 muxes, 3 repetitions of 30 s; ci = 2 servers, 1 mux, 1 × 8 s.
func awfdShape(size string) (lab.AWFDExperiment, error) {
	e := lab.AWFDExperiment{Servers: 4, Muxes: 2, Clients: 2, Rates: []float64{40e6, 20e6}, Load: 0.95, Reps: 3,
		Flow: lab.FlowOptions{Duration: 30 * time.Second, MeanSize: 256 << 10, Alpha: 2, MaxSize: 32 << 20, Seed: 1}}
	switch size {
	case lab.SizePaper:
	case lab.SizeCI:
		e.Servers, e.Muxes, e.Clients, e.Reps, e.Flow.Duration = 2, 1, 1, 1, 8*time.Second
	default:
		return e, fmt.Errorf("size %q: want %s or %s", size, lab.SizePaper, lab.SizeCI)
	}
	return e, nil
}

func labAWFDCmd() *cobra.Command {
	var (
		size, out string
		plotDir   string
		replot    string
		reps      int
		duration  time.Duration
		loss      bool
		only      []string
	)
	cmd := &cobra.Command{
		Use:   "awfd",
		Short: "Spotlight's testbed experiment: AWFD vs equal shares on servers of unequal capacity (throughput, FCT, record loss)",
		Long: `Servers of unequal capacity (tbf 40/20 Mbit/s, 2:1), HTTP downloads of Pareto (α=2)
sizes at Poisson times near the pool's capacity, one fresh lab per run: aggregate
throughput and mean flow completion time of AWFD (m=2,4; polls 250 ms, 500 ms,
1 s), Beamer with equal weights and Maglev (Spotlight Fig. 12/13); with --loss,
AWFD m=4 at 250 ms losing 0–33% of its class records at every mux (Fig. 14).
See docs/strategy-awfd.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name := "awfd-lab"
			if loss {
				name = "awfd-loss"
			}
			if replot != "" {
				var res lab.AWFDResult
				b, err := os.ReadFile(replot)
				if err == nil {
					err = json.Unmarshal(b, &res)
				}
				if err != nil {
					return fmt.Errorf("--replot %s: %w", replot, err)
				}
				if plotDir == "" {
					return fmt.Errorf("--replot needs --plot DIR")
				}
				return lab.PlotAWFD(&res, plotDir, name)
			}
			e, err := awfdShape(size)
			if err != nil {
				return err
			}
			if reps > 0 {
				e.Reps = reps
			}
			if duration > 0 {
				e.Flow.Duration = duration
			}
			e.Variants = awfdVariants(size, loss)
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
			if e.Lab, err = os.Executable(); err != nil {
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
			if plotDir != "" {
				if err := lab.PlotAWFD(res, plotDir, name); err != nil {
					return err
				}
			}
			fmt.Printf("capacity %.0f Mbit/s, offered %.0f Mbit/s\n%-26s %16s %18s %7s\n", res.Capacity, res.Offered, "variant", "throughput Mb/s", "mean FCT ms", "failed")
			for _, s := range res.Summary {
				fmt.Printf("%-26s %8.1f ± %5.1f %9.0f ± %6.0f %7d\n", s.Variant.Name, s.Throughput, s.ThroughputErr, s.MeanFCT, s.MeanFCTErr, s.Failed)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&size, "size", lab.SizePaper, "paper (4 servers, 2 muxes, 3 × 30 s per variant) or ci (2 servers, 1 mux, 1 × 8 s)")
	f.IntVar(&reps, "reps", 0, "repetitions (default: the size's)")
	f.DurationVar(&duration, "duration", 0, "arrivals per run (default: the size's)")
	f.StringSliceVar(&only, "only", nil, `run only these variants (names as printed, e.g. "awfd m=2 1s")`)
	f.BoolVar(&loss, "loss", false, "run the record-loss experiment (Fig. 14) instead")
	f.StringVar(&out, "json", "", "also write every run as JSON to this file")
	f.StringVar(&plotDir, "plot", "", "also write SVG figures (throughput, mean FCT) into this directory")
	f.StringVar(&replot, "replot", "", "only plot the JSON of an earlier run (with --plot; --loss names the figures awfd-loss)")
	return cmd
}
