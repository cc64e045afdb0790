package lab

import (
	"fmt"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Strategy is what the lab does differently per forwarding strategy: one
// type per strategy in its own file (strategy_NAME.go), registered by name.
type Strategy interface {
	Name() string
	// Check rejects parameters the strategy cannot run with.
	Check(buckets uint32) error
	// AgentWindow is the chaining window the servers' agents run with,
	// given the run's window.
	AgentWindow(window time.Duration) time.Duration
}

// mctKeeper is implemented by strategies whose muxes keep a
// migrated-connection table: the sampler reads its size every second and
// the report plots it (prism.go).
type mctKeeper interface{ keepsMCT() }

// decisionCounters is implemented by strategies whose muxes count their
// decisions in a counter family of their own (the AWFD experiment sums
// it).
type decisionCounters interface{ decisionCounters() string }

var strategies = map[string]Strategy{}

func registerStrategy(s Strategy) { strategies[s.Name()] = s }

// Strategies lists the strategies the lab runs, in the order of their codes
// in the mux (forwarding.Strategies): the default of `--strategy`.
func Strategies() []string {
	var out []string
	for _, s := range forwarding.Strategies() {
		if _, ok := strategies[string(s)]; ok {
			out = append(out, string(s))
		}
	}
	return out
}

// StrategyOf is the named strategy, or an error naming those there are.
func StrategyOf(name string) (Strategy, error) {
	if s, ok := strategies[name]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("strategy %q: want %s", name, strings.Join(Strategies(), ", "))
}

// CheckStrategies rejects an empty or unknown list of strategies.
func CheckStrategies(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("give at least one of %s", strings.Join(Strategies(), ", "))
	}
	for _, n := range names {
		if _, err := StrategyOf(n); err != nil {
			return err
		}
	}
	return nil
}
