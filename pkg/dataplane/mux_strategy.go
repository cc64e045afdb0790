package dataplane

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
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
	// newState makes the strategy's per-instance maps filled from t, or
	// nil when it has none.
	newState(cfg forwarding.Instance, t *forwarding.Table) (instanceState, error)
}

// instanceState is a strategy's per-instance maps. The mux calls install
// before the VIP records name the instance's slot, before with each delta
// before any bucket word of the delta is written, after once the VIP
// records name the delta's generation, and uninstall and close when the
// slot is released.
type instanceState interface {
	install(m *Mux, slot uint32) error
	uninstall(m *Mux, slot uint32)
	before(d *forwarding.Delta) error
	after(d *forwarding.Delta)
	close()
}

var muxStrategies = map[forwarding.Strategy]muxStrategy{}

func registerMuxStrategy(name forwarding.Strategy, s muxStrategy) {
	if _, dup := muxStrategies[name]; dup {
		panic(fmt.Sprintf("dataplane: strategy %q registered twice", name))
	}
	if _, dup := muxspi.Lookup(name); dup {
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
	if s, ok := muxspi.Lookup(cfg.Strategy); ok {
		return spiMux{s}
	}
	return unsupported{cfg.Strategy}
}

// spiMux is a strategy of its own package (pkg/strategy/NAME, registered
// in muxspi) seen through this package's interface, which the strategies
// still written here share.
type spiMux struct{ s muxspi.MuxStrategy }

func (a spiMux) prepare(m *Mux) error { return a.s.Prepare(muxHost{m}) }
func (a spiMux) histories() bool      { return a.s.Histories() }
func (a spiMux) newState(cfg forwarding.Instance, t *forwarding.Table) (instanceState, error) {
	st, err := a.s.NewState(cfg, t)
	if err != nil || st == nil {
		return nil, err
	}
	return spiState{st}, nil
}

type spiState struct{ s muxspi.InstanceState }

func (a spiState) install(m *Mux, slot uint32) error { return a.s.Install(muxHost{m}, slot) }
func (a spiState) uninstall(m *Mux, slot uint32)     { a.s.Uninstall(muxHost{m}, slot) }
func (a spiState) before(d *forwarding.Delta) error  { return a.s.Before(d) }
func (a spiState) after(d *forwarding.Delta)         { a.s.After(d) }
func (a spiState) close()                            { a.s.Close() }

// muxHost is what a loaded mux offers a strategy of its own package
// (muxspi.MuxHost); its methods run with m.mu held, as prepare's and
// install's callers hold it.
type muxHost struct{ m *Mux }

func (h muxHost) EnsureConnTrack() error { return h.m.ensureConnTrack() }

// unsupported refuses to load an instance of a strategy this mux lacks.
type unsupported struct{ name forwarding.Strategy }

func (u unsupported) prepare(*Mux) error {
	return fmt.Errorf("dataplane: strategy %q is not built into this mux", u.name)
}
func (unsupported) histories() bool { return false }
func (unsupported) newState(forwarding.Instance, *forwarding.Table) (instanceState, error) {
	return nil, nil
}
