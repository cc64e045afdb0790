package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/beamer-lb/beamer/research/bench/scalebench"
	"github.com/spf13/cobra"
)

// benchControlPlaneCmd is `beamer-lab bench control-plane`.
func benchControlPlaneCmd() *cobra.Command {
	var (
		stores, presets string
		o               scalebench.Options
		asJSON          bool
		budgetMB        int64
	)
	cmd := &cobra.Command{
		Use:   "control-plane",
		Short: "The controller at the paper's scale: ctl add-dip/remove-dip to every mux, bytes per mux, cold start, controller CPU and memory",
		Long: `Starts a real store server (etcd, ZooKeeper or both, one after the other, on
loopback ports), a real controller process (this binary's "controller"
command), and --followers muxes' ring followers (pkg/node/muxd's code) each on its
own store connection, applying to an in-memory data plane (one 64-bit word per
bucket, as the XDP mux's map). Then, as ctl does: adds --batch DIPs in one
request, runs --ops single add-dip / remove-dip operations, starts
--cold-starts fresh muxes, removes the batch in one request; and checks every
follower ends with the store's table. Prints a markdown table beside the
paper's figures (§6), or JSON. Followers share this machine's cores and
memory: a run whose followers would not fit --memory-budget is refused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bin, err := beamerBinary()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			var runs []*scalebench.Result
			fl := cmd.Flags()
			if !fl.Changed("preset") && (fl.Changed("followers") || fl.Changed("dips") || fl.Changed("buckets")) {
				presets = "custom" // sizes given: one run of exactly those
			}
			for _, name := range strings.Split(presets, ",") {
				p, ok := scalebench.Presets[strings.TrimSpace(name)]
				if !ok {
					return fmt.Errorf("unknown --preset %q: paper, fanout or custom", name)
				}
				// Flags given explicitly win over the preset.
				for flag, v := range map[string]*int{"followers": &p.Followers, "dips": &p.DIPs, "buckets": &p.Buckets,
					"batch": &p.Batch, "ops": &p.Ops, "cold-starts": &p.ColdStarts, "xdp-muxes": &p.XDPMuxes} {
					if cmd.Flags().Changed(flag) {
						*v, _ = cmd.Flags().GetInt(flag)
					}
				}
				if fl.Changed("dips") && !fl.Changed("buckets") {
					p.Buckets = 0 // 100 per DIP, as in the paper
				}
				if fl.Changed("dips") && !fl.Changed("batch") {
					p.Batch = 0
				}
				if p.Buckets == 0 {
					p.Buckets = 100 * p.DIPs
				}
				if p.Batch == 0 {
					p.Batch = p.DIPs / 2
				}
				p.Controller, p.Progress, p.MemoryBudget, p.Timeout = scalebench.BeamerController(bin), os.Stderr, budgetMB<<20, o.Timeout
				for _, s := range strings.Split(stores, ",") {
					p.Store = strings.TrimSpace(s)
					r, err := scalebench.Run(ctx, p)
					if err != nil {
						if len(runs) > 0 && !asJSON { // keep what was measured
							scalebench.PrintMarkdown(os.Stdout, runs)
						}
						return fmt.Errorf("%s, %d followers, %d DIPs: %w", p.Store, p.Followers, p.DIPs, err)
					}
					runs = append(runs, r)
				}
			}
			if asJSON {
				enc := json.NewEncoder(os.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(runs)
			}
			scalebench.PrintMarkdown(os.Stdout, runs)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&stores, "store", "etcd,zookeeper", "store servers to run against, one run each: etcd, zookeeper")
	f.StringVar(&presets, "preset", "paper,fanout", "sizes to run, each on every --store: paper (64,000 DIPs, 6.4M buckets, 20 muxes: what fits this machine's memory), fanout (100 muxes, 6,400 DIPs, 640K buckets), custom (the flags below)")
	f.IntVar(&o.Followers, "followers", 0, "muxes following the ring (overrides the preset)")
	f.IntVar(&o.DIPs, "dips", 0, "DIPs of the instance at its largest, at most 64511 server ids (overrides the preset)")
	f.IntVar(&o.Buckets, "buckets", 0, "bucket count (default 100 per DIP)")
	f.IntVar(&o.Batch, "batch", 0, "DIPs added, and later removed, in one request (default half of --dips; paper: 32K)")
	f.IntVar(&o.Ops, "ops", 0, "single add-dip / remove-dip operations timed, alternately (overrides the preset)")
	f.IntVar(&o.ColdStarts, "cold-starts", 0, "fresh muxes started alone at the end, each timed (overrides the preset)")
	f.IntVar(&o.XDPMuxes, "xdp-muxes", 0, "real XDP muxes (pkg/node/muxd in network namespaces of their own) following beside the followers; needs root (presets: 2)")
	f.Int64Var(&budgetMB, "memory-budget", 0, "MB the followers may use (default 70% of the available memory)")
	f.DurationVar(&o.Timeout, "timeout", 0, "bound on each request and each wait for the muxes (default 10m)")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of the table")
	return cmd
}
