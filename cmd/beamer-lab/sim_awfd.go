package main

import (
	"encoding/json"

	"github.com/beamer-lb/beamer/research/sim/awfdsim"
	"github.com/spf13/cobra"
)

// newSimAwfdCommand is `beamer-lab sim awfd`.
func newSimAwfdCommand() *cobra.Command {
	c := awfdsim.Default()
	var asJSON bool
	var plotDir string
	var seeds int
	cmd := &cobra.Command{
		Use:   "awfd",
		Short: "Spotlight's flow-level simulation: service utilisation of ECMP, WCMP, LCF, AWFD and the heuristic optimum",
		Long: `Reproduces Spotlight's Fig. 8 (service utilisation Ω vs update interval) and
Fig. 10 (AWFD Ω vs the number of classes m) at the paper's scale: 100k flows,
Poisson arrivals (1 ms), 10 s mean duration, Pareto (α=2) rates, 4 VIPs × 100
DIPs of capacities 1:2, chains of 1–4 services. See docs/strategy-awfd.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c.Seeds = nil
			for i := 1; i <= seeds; i++ {
				c.Seeds = append(c.Seeds, uint64(i))
			}
			r, err := awfdsim.Run(c)
			if err != nil {
				return err
			}
			if plotDir != "" {
				if err := awfdsim.Plot(r, plotDir); err != nil {
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
	f.StringVar(&plotDir, "plot", "", "also write SVG figures into this directory (created if missing)")
	f.IntVar(&c.Flows, "flows", c.Flows, "flows simulated per seed")
	f.IntVar(&c.VIPs, "vips", c.VIPs, "services (VIPs)")
	f.IntVar(&c.DIPsPerVIP, "dips", c.DIPsPerVIP, "DIPs per VIP")
	f.Float64Var(&c.Overload, "overload", c.Overload, "mean demand / capacity")
	f.DurationVar(&c.Warmup, "warmup", c.Warmup, "time before Ω is measured")
	f.DurationSliceVar(&c.Intervals, "intervals", c.Intervals, "update intervals of Fig. 8")
	f.IntSliceVar(&c.Classes, "classes", c.Classes, "AWFD m of Fig. 8's curves")
	f.IntVar(&seeds, "seeds", len(c.Seeds), "seeds 1..N (one run each; mean and standard error)")
	return cmd
}
