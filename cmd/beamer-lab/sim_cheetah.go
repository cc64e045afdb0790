package main

import (
	"encoding/json"

	"github.com/beamer-lb/beamer/research/sim/cheetahsim"
	"github.com/spf13/cobra"
)

// newSimCheetahCommand is `beamer-lab sim cheetah`.
func newSimCheetahCommand() *cobra.Command {
	c := cheetahsim.Default()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "cheetah",
		Short: "PCC violations vs DIP update rate (Beamer as published, this product's Beamer, Maglev, Cheetah) and load imbalance (round robin vs hash) as in the Cheetah paper",
		Long: `Runs the Cheetah paper's two simulations with the product's own controller code
(bucket rebalance and histories with holds, Maglev tables) and prints them
beside the paper's figures. Beamer runs twice on the same workload: as
published (one previous owner per bucket, a fixed daisy-chaining window: the
Beamer the Cheetah paper measured) and as this product builds it (K previous
owners, holds). See docs/strategy-cheetah.md; scripts/sim-doc.sh writes its
tables from this command's --json output.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := cheetahsim.Run(c)
			if err != nil {
				return err
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
	f.Uint64Var(&c.PCC.Seed, "seed", c.PCC.Seed, "seed of every random choice")
	f.IntVar(&c.PCC.Servers, "servers", c.PCC.Servers, "servers of the PCC run")
	f.IntVar(&c.PCC.Active, "active", c.PCC.Active, "active connections of the PCC run")
	f.Float64Var(&c.PCC.Duration, "duration", c.PCC.Duration, "simulated seconds per update rate")
	f.Float64SliceVar(&c.PCC.PerMinute, "rates", c.PCC.PerMinute, "DIP updates per minute")
	f.IntSliceVar(&c.ImbalanceServers, "imbalance-servers", c.ImbalanceServers, "server counts of the imbalance run")
	f.IntSliceVar(&c.ImbalanceActive, "imbalance-active", c.ImbalanceActive, "active connection counts of the imbalance run")
	return cmd
}
