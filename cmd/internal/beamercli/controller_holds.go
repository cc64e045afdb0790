package beamercli

import (
	"fmt"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/spf13/cobra"
)

// addHoldFlags adds the flags of connection holds to `beamer controller`
// and returns what applies them to the run options.
func addHoldFlags(cmd *cobra.Command) func(*controller.RunOptions) error {
	off := cmd.Flags().Bool("no-holds", false, "do not ask agents which connections servers still hold: every previous owner gets the fixed chaining window only")
	var h controller.HoldOptions
	cmd.Flags().DurationVar(&h.Interval, "hold-interval", 10*time.Second, "how often the agents of servers named in bucket histories are asked for their connections (at most a quarter of an instance's chaining window)")
	cmd.Flags().DurationVar(&h.MaxHold, "max-hold", 24*time.Hour, "longest a previous owner keeps a bucket past its window because it still holds connections there")
	cmd.Flags().DurationVar(&h.Timeout, "hold-timeout", 2*time.Second, "timeout of one agent's connection report")
	cmd.Flags().DurationVar(&h.Settle, "hold-settle", 5*time.Second, "a server counts as holding nothing in a bucket it left only by an agent report asked this long after the bucket's last move (muxes may apply a move late)")
	evictOldest := cmd.Flags().Bool("history-evict-oldest", false, "when a move leaves more than max_chain previous owners, push out the oldest even if one known to hold no connection there could leave instead (evictions of holders are reported either way)")
	return func(o *controller.RunOptions) error {
		o.EvictOldest = *evictOldest
		if *off {
			return nil
		}
		if h.Interval <= 0 || h.MaxHold <= 0 || h.Timeout <= 0 || h.Settle <= 0 {
			return fmt.Errorf("--hold-interval, --max-hold, --hold-timeout and --hold-settle must be positive")
		}
		o.Holds = &h
		return nil
	}
}
