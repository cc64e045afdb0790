package beamercli

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/spf13/cobra"
)

// prismCreateFlags are ctl create's options of the prism strategy.
type prismCreateFlags struct{ mctEntries *uint32 }

func addPrismCreateFlags(create *cobra.Command) *prismCreateFlags {
	return &prismCreateFlags{mctEntries: create.Flags().Uint32("mct-entries", 0, fmt.Sprintf("prism: size of the migrated-connection table (default %d, at most %d)", forwarding.DefaultMCTEntries, forwarding.MaxMCTEntries))}
}

func (f *prismCreateFlags) apply(cmd *cobra.Command, in *forwarding.Instance) error {
	if cmd.Flags().Changed("mct-entries") {
		in.Prism = &forwarding.PrismOptions{MCTEntries: *f.mctEntries}
	}
	return nil
}

func (f *prismCreateFlags) refuse(cmd *cobra.Command, in *forwarding.Instance) error {
	if cmd.Flags().Changed("mct-entries") {
		return fmt.Errorf("--mct-entries is a prism option; this instance is %s", in.Strategy)
	}
	return nil
}
