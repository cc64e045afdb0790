package beamercli

import (
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/prism"
	"github.com/spf13/cobra"
)

// addPrismFlags adds the flags of Prism's keep-alive pruning to `beamer
// controller` and returns what applies them to the run options.
func addPrismFlags(cmd *cobra.Command) func(*controller.RunOptions) error {
	var k prism.KeepAlive
	cmd.Flags().StringSliceVar(&k.Muxes, "prism-muxes", nil, "muxes' node API addresses (mux --api, host:port): prune Prism MCT entries no mux has hit for --prism-idle-rounds (their servers' socket lists as the second opinion); without a mux list, the servers' socket lists alone decide")
	cmd.Flags().StringVar(&k.MuxesFile, "prism-muxes-file", "", "file listing more mux addresses, one host:port a line, read again every round (name every mux: a mux left out makes its connections look idle)")
	cmd.Flags().DurationVar(&k.Every, "prism-keepalive-every", 10*time.Second, "how often the muxes' MCT keep-alive bits are collected (one round)")
	cmd.Flags().IntVar(&k.IdleRounds, "prism-idle-rounds", 3, "rounds no mux hit an MCT entry before its server is asked whether the connection still lives")
	cmd.Flags().IntVar(&k.IdleMax, "prism-idle-max", 0, "rounds no mux hit an MCT entry after which it goes even if its server still holds the socket (clients gone without a FIN); 0: never")
	cmd.Flags().DurationVar(&k.Timeout, "prism-keepalive-timeout", 2*time.Second, "timeout of one mux's answer (a mux that does not answer makes the round count for nothing)")
	return func(o *controller.RunOptions) error {
		if len(k.Muxes) == 0 && k.MuxesFile == "" {
			return nil
		}
		if err := k.Validate(); err != nil {
			return err
		}
		prismOptions(o).KeepAlive = &k
		return nil
	}
}

// prismOptions are Prism's controller options in o, made on first use.
func prismOptions(o *controller.RunOptions) *prism.ControllerOptions {
	if o.Strategies == nil {
		o.Strategies = map[forwarding.Strategy]any{}
	}
	p, ok := o.Strategies[forwarding.StrategyPrism].(*prism.ControllerOptions)
	if !ok {
		p = &prism.ControllerOptions{}
		o.Strategies[forwarding.StrategyPrism] = p
	}
	return p
}
