package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/beamer-lb/beamer/cmd/internal/beamercli"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/beamer-lb/beamer/research/faults/storeloss"
	"github.com/spf13/cobra"
)

// newMuxCommand is the product's `beamer mux` with the loss experiment's
// fault around its store (Spotlight's Fig. 14, `lab awfd --drop`): every
// read of an AWFD class record is lost with probability --awfd-drop, so the
// mux keeps the record it had. The fault lives here, in the research wing;
// the product's mux has no such option.
func newMuxCommand() *cobra.Command {
	var drop float64
	var seed uint64
	cmd := beamercli.NewMuxCommand(beamercli.MuxHooks{
		Flags: func(cmd *cobra.Command) {
			cmd.Flags().Float64Var(&drop, "awfd-drop", 0, "lose each read of an AWFD class record with this probability, as a lost update (the loss experiment)")
			cmd.Flags().Uint64Var(&seed, "awfd-drop-seed", 1, "seed of the losses, for a repeatable run")
		},
		Check: func() error {
			if !(drop >= 0 && drop < 1) {
				return fmt.Errorf("--awfd-drop %v: must be in [0, 1)", drop)
			}
			return nil
		},
		WrapStore: func(st store.Store, log *slog.Logger) (store.Store, error) {
			if drop == 0 {
				return st, nil
			}
			log.Warn("experiment: AWFD class records are lost on their way to this mux", "probability", drop, "seed", seed)
			return storeloss.Wrap(st, isAWFDRecord, drop, seed)
		},
	})
	cmd.Short = "Run the product's mux with the AWFD loss experiment's fault (--awfd-drop)"
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error { return beamercli.ApplyEnv(cmd) }
	return cmd
}

// isAWFDRecord is an instance's class record key: what classes.Key appends
// to any instance's key.
func isAWFDRecord(key string) bool { return strings.HasSuffix(key, classes.Key(ring.Keys{})) }
