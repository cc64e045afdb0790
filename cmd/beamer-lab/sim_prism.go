package main

import (
	"encoding/json"

	"github.com/beamer-lb/beamer/pkg/strategy/prism/migration"
	"github.com/spf13/cobra"
)

// newSimPrismCommand is `beamer-lab sim prism`.
func newSimPrismCommand() *cobra.Command {
	o := migration.DefaultSimOptions()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "prism",
		Short: "Reproduce the Prism paper's simulations (Fig. 6, Table 1, Fig. 7, Appendix A, §5.3)",
		Long: `Runs the Prism strategy's algorithms (pkg/strategy/prism/migration: Algorithm 1 as the controller
runs it, Algorithm 2's bin choice) on the paper's synthetic workloads, scaled by
the SYN rate where the paper's connection counts do not fit (--scale): shares
are unchanged by it, per-update counts are reported measured and multiplied
back. See docs/strategy-prism.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := migration.Simulate(o)
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
	f.IntVar(&o.Seeds, "seeds", o.Seeds, "runs averaged per point (paper: 5)")
	f.Float64Var(&o.Scale, "scale", o.Scale, "divide the paper's 1M SYN/s by this in Fig. 6 / Table 1")
	f.Float64Var(&o.Duration, "duration", o.Duration, "simulated seconds of each Fig. 6 run (paper: 500)")
	f.IntVar(&o.Runs, "runs", o.Runs, "Algorithm 1 runs per MCT write rate (paper: 2,000)")
	f.Float64Var(&o.Alg2Rate, "alg2-rate", o.Alg2Rate, "SYN/s of the Appendix A VIP (paper: 10,000)")
	return cmd
}
