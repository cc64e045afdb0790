package muxd

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// daemonStrategy is what the mux daemon does for the instances of a
// strategy still written in this package (prism.go) besides following
// their ring; strategies of their own package register their daemon side
// in daemonspi (Follow, metrics; strategy_host.go). A strategy that needs
// nothing more registers nothing, and the rest of the daemon asks its
// hooks instead of comparing names.
type daemonStrategy struct {
	// sweepsMCT: its instances keep a migrated-connection table whose
	// keep-alive bits the daemon sweeps and exports (Prism).
	sweepsMCT bool
}

var daemonStrategies = map[forwarding.Strategy]daemonStrategy{}

func registerDaemonStrategy(name forwarding.Strategy, s daemonStrategy) {
	if _, dup := daemonStrategies[name]; dup {
		panic(fmt.Sprintf("muxd: strategy %q registered twice", name))
	}
	daemonStrategies[name] = s
}

// daemonStrategyOf is the hooks of an instance's strategy (none for a
// strategy that registered none).
func daemonStrategyOf(cfg *forwarding.Instance) daemonStrategy { return daemonStrategies[cfg.Strategy] }
