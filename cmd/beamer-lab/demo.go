package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/beamer-lb/beamer/research/lab"
	"github.com/spf13/cobra"
)

// newDemoCommand is `beamer-lab demo` (make demo).
func newDemoCommand() *cobra.Command {
	var (
		strategies []string
		out        string
		seed       int64
		stretch    float64
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a load balancer in network namespaces and show connections surviving a rolling removal of servers and a mux leaving",
		Long: `Builds a small datacenter in network namespaces — clients, a border router running
FRR bgpd with ECMP over two muxes that announce the VIP over BGP, servers running the
agent and an HTTP server, a controller with its embedded etcd store — keeps
persistent HTTP connections downloading through the VIP, removes three servers one
request each, 2 s apart (a rolling removal), then a mux, and prints how many
connections broke, for each strategy. Writes plots.
Everything is removed at the end. Needs root. (The full experiments: beamer-lab lab run.)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needRoot("the demo"); err != nil {
				return err
			}
			if err := checkStrategies(strategies); err != nil {
				return err
			}
			bin, err := beamerBinary()
			if err != nil {
				return err
			}
			ctx, stop := interruptible()
			defer stop()
			if stretch <= 0 || stretch > 100 {
				return fmt.Errorf("--stretch %v: want a factor in (0, 100]", stretch)
			}
			results, err := lab.RunDemo(ctx, lab.DemoOptions{Beamer: bin, Strategies: strategies, Out: out, Stretch: stretch,
				Params: func(p *lab.Params) { p.Seed = seed }}, os.Stdout)
			if err != nil {
				return err
			}
			for _, r := range results {
				fmt.Println(r.SummaryLine())
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&strategies, "strategy", demoStrategies, "strategies to run, in order ("+strings.Join(lab.Strategies(), ", ")+")")
	cmd.Flags().StringVar(&out, "out", "lab-results/demo", "directory for plots and results.json (\"\" = none)")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the flows and the router's ECMP hash")
	cmd.Flags().Float64Var(&stretch, "stretch", 1, "multiply the schedule's times by this factor")
	return cmd
}
