package beamercli

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/spf13/cobra"
)

// strategyFlags are one strategy's own options of `ctl create`
// (ctl_NAME.go). Given with another strategy they are an error, not
// silently ignored.
type strategyFlags interface {
	// apply fills the instance's options block from the flags.
	apply(cmd *cobra.Command, in *forwarding.Instance) error
	// refuse says why the flags cannot go with in, whose strategy is
	// another, if any of them was given.
	refuse(cmd *cobra.Command, in *forwarding.Instance) error
}

// addStrategyFlags registers the strategies' own flags on create: one line
// per strategy that has any.
func addStrategyFlags(create *cobra.Command) map[forwarding.Strategy]strategyFlags {
	return map[forwarding.Strategy]strategyFlags{
		forwarding.StrategyPrism:   addPrismCreateFlags(create),
		forwarding.StrategyCheetah: addCheetahFlags(create),
		forwarding.StrategyAWFD:    addAWFDCreateFlags(create),
	}
}

// applyStrategyFlags applies the flags of in's strategy and refuses those
// of the others that were given.
func applyStrategyFlags(cmd *cobra.Command, in *forwarding.Instance, flags map[forwarding.Strategy]strategyFlags) error {
	for _, s := range forwarding.Strategies() {
		f, ok := flags[s]
		if !ok {
			continue
		}
		act := f.refuse
		if s == in.Strategy {
			act = f.apply
		}
		if err := act(cmd, in); err != nil {
			return err
		}
	}
	return nil
}
