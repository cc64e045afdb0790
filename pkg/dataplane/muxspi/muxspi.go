// Package muxspi is the mux loader's strategy interface: what
// pkg/dataplane asks of an instance's strategy when it loads the instance
// into the XDP mux, and the registry a strategy's own package
// (pkg/strategy/NAME) adds itself to in init().
//
// It imports no layer: a strategy package imports it, never pkg/dataplane,
// so dataplane's own tests can load every strategy (pkg/strategy/all)
// without an import cycle. The program's dispatch reads the strategy's
// code (forwarding.Strategy.Code) from the VIP record.
package muxspi

import (
	"fmt"
	"sync"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// MuxStrategy is what the mux loader does differently per strategy.
type MuxStrategy interface {
	// Prepare creates the maps the strategy's decision reads that all its
	// instances share, before an instance of it is loaded (idempotent;
	// called with the mux's lock held).
	Prepare(h MuxHost) error
	// Histories: bucket words name chain entries (previous owners).
	Histories() bool
	// NewState makes the strategy's per-instance maps filled from t, or
	// nil when it has none.
	NewState(cfg forwarding.Instance, t *forwarding.Table) (InstanceState, error)
}

// InstanceState is a strategy's per-instance maps. The mux calls Install
// before the VIP records name the instance's slot, Before with each delta
// before any bucket word of the delta is written, After once the VIP
// records name the delta's generation, and Uninstall and Close when the
// slot is released.
type InstanceState interface {
	Install(h MuxHost, slot uint32) error
	Uninstall(h MuxHost, slot uint32)
	Before(d *forwarding.Delta) error
	After(d *forwarding.Delta)
	Close()
}

// MuxHost is what the loaded mux offers a strategy.
type MuxHost interface {
	// EnsureConnTrack creates the connection table the connection-keeping
	// strategies share (Maglev's, AWFD's) on first use.
	EnsureConnTrack() error
}

var (
	mu         sync.RWMutex
	strategies = map[forwarding.Strategy]MuxStrategy{}
)

// Register adds name's mux side; a strategy package calls it from init().
func Register(name forwarding.Strategy, s MuxStrategy) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := strategies[name]; dup {
		panic(fmt.Sprintf("muxspi: strategy %q registered twice", name))
	}
	strategies[name] = s
}

// Lookup is the registered mux side of name.
func Lookup(name forwarding.Strategy) (MuxStrategy, bool) {
	mu.RLock()
	defer mu.RUnlock()
	s, ok := strategies[name]
	return s, ok
}
