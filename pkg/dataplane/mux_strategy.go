package dataplane

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// muxStrategy is what the mux loader does differently per strategy: one
// type per strategy in its own file (mux_NAME.go), registered by name. The
// VIP record carries forwarding.Strategy.Code, which the program's one
// dispatch (bpf/mux.c) reads.
type muxStrategy interface {
	// prepare creates the maps the strategy's decision reads that all its
	// instances share, before an instance of it is loaded (idempotent;
	// called with m.mu held).
	prepare(m *Mux) error
	// histories: bucket words name chain entries (previous owners).
	histories() bool
}

var muxStrategies = map[forwarding.Strategy]muxStrategy{}

func registerMuxStrategy(name forwarding.Strategy, s muxStrategy) {
	if _, dup := muxStrategies[name]; dup {
		panic(fmt.Sprintf("dataplane: strategy %q registered twice", name))
	}
	muxStrategies[name] = s
}

// muxStrategyOf is the strategy of a validated configuration. A strategy
// registered in forwarding but not here would forward nothing (the program
// counts drop_bad_strategy), so it is refused before: see SetInstance.
func muxStrategyOf(cfg forwarding.Instance) muxStrategy {
	if s, ok := muxStrategies[cfg.Strategy]; ok {
		return s
	}
	return unsupported{cfg.Strategy}
}

// unsupported refuses to load an instance of a strategy this mux lacks.
type unsupported struct{ name forwarding.Strategy }

func (u unsupported) prepare(*Mux) error {
	return fmt.Errorf("dataplane: strategy %q is not built into this mux", u.name)
}
func (unsupported) histories() bool { return false }
