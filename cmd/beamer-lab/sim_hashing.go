package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/beamer-lb/beamer/research/sim/hashsim"
	"github.com/spf13/cobra"
)

// newSimHashingCommand is `beamer-lab sim hashing`.
func newSimHashingCommand() *cobra.Command {
	c := hashsim.Default()
	var asJSON bool
	var plotDir string
	cmd := &cobra.Command{
		Use:   "hashing",
		Short: "Compare stable, Maglev, consistent and rendezvous hashing as in the Beamer and Maglev papers",
		Long: `Reproduces Beamer's appendix Table 1, fragmentation table and defragmentation
run, Maglev's balance, resilience and build-time figures, and (with --scale)
Beamer's controller scale test, printing each beside the paper's figures.
See docs/hashing.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := hashsim.Run(c)
			if err != nil {
				return err
			}
			if plotDir != "" {
				if err := writePlots(r, plotDir); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(r)
			}
			return r.WriteText(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&asJSON, "json", false, "print one JSON object instead of tables")
	f.StringVar(&plotDir, "plot", "", "also write PNG figures into this directory (created if missing)")
	f.BoolVar(&c.Scale, "scale", false, "also run the controller scale test (64K DIPs × 100 buckets; ~1 GB of memory)")
	f.Uint64Var(&c.Seed, "seed", c.Seed, "seed of every random choice")
	f.IntVar(&c.Reps, "reps", c.Reps, "random removals averaged per churn figure")
	f.IntVar(&c.BalanceReps, "balance-reps", c.BalanceReps, "backend-id draws averaged in the balance figure")
	f.IntVar(&c.Table1VNodes, "vnodes", c.Table1VNodes, "virtual nodes per server of consistent hashing in Table 1")
	f.IntVar(&c.KargerVNodes, "karger-vnodes", c.KargerVNodes, "virtual nodes per backend of Karger hashing in the Maglev figures")
	f.IntVar(&c.FragDIPs, "frag-dips", c.FragDIPs, "DIPs of the fragmentation table and defragmentation run")
	f.Uint32Var(&c.FragBuckets, "frag-buckets", c.FragBuckets, "buckets of the fragmentation table and defragmentation run")
	f.IntVar(&c.Defrag.MaxMoves, "bmax", c.Defrag.MaxMoves, "defragmentation: max buckets moved per server per iteration")
	f.Float64Var(&c.Defrag.TargetRate, "fr", c.Defrag.TargetRate, "defragmentation: target rules per DIP")
	f.IntVar(&c.ScaleDIPs, "scale-dips", c.ScaleDIPs, "DIPs of the scale test")
	f.IntVar(&c.ScalePerDIP, "scale-buckets-per-dip", c.ScalePerDIP, "buckets per DIP of the scale test")
	f.IntSliceVar(&c.ScaleChanges, "scale-changes", c.ScaleChanges, "DIP counts added and removed in the scale test")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		// Threshold only gates when a controller starts; here the run
		// always starts, so keep it consistent with the target.
		c.Defrag.Threshold = max(c.Defrag.Threshold, c.Defrag.TargetRate)
		if err := c.Validate(); err != nil {
			return fmt.Errorf("sim hashing: %w", err)
		}
		if plotDir != "" {
			if err := os.MkdirAll(plotDir, 0o755); err != nil {
				return fmt.Errorf("sim hashing: --plot: %w", err)
			}
		}
		return nil
	}
	return cmd
}
