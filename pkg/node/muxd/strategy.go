package muxd

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// daemonStrategy is what the mux daemon does for a strategy's instances
// besides following their ring: registered by name from the strategy's own
// file (awfd.go, prism.go); a strategy that needs nothing more registers
// nothing, and the rest of the daemon asks its hooks instead of comparing
// names.
type daemonStrategy struct {
	// follow keeps what an instance reads from the store outside the ring
	// loaded until ctx ends (AWFD's class record); nil: nothing.
	follow func(d *Daemon, ctx context.Context, st store.Store, k ring.Keys, name string, log *slog.Logger)
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
