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
	"errors"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
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

// MuxHost is what the loaded mux offers a strategy. Its methods run with
// the mux's lock held: inside Prepare, the InstanceState calls and the
// function given to the mux's WithInstance.
type MuxHost interface {
	// EnsureConnTrack creates the connection table the connection-keeping
	// strategies share (Maglev's, AWFD's) on first use.
	EnsureConnTrack() error
	// Map is a map of the loaded program by its name in bpf/ (the
	// strategy's own: mct_tables, cheetah_insts, awfd_records, ...).
	Map(name string) (*ebpf.Map, error)
	// Spec is the loaded program's collection spec, where a strategy reads
	// its limits and struct layouts (never copies them by hand).
	Spec() *ebpf.CollectionSpec
}

// ErrUnknownInstance: no instance of that name is loaded in the mux.
var ErrUnknownInstance = errors.New("dataplane: unknown instance")

// WithInstance is the loaded mux's WithInstance: it runs f with the named
// instance's slot, applied generation and strategy state under the mux's
// lock. A strategy's package is given it (it never imports the loader).
type WithInstance func(name string, f func(h MuxHost, slot, generation uint32, st InstanceState) error) error

// TableWatcher is an InstanceState the mux tells, with the mux's lock
// held, each time the instance's table is installed in its slot or
// changed by a delta (before the VIP records name the new generation).
type TableWatcher interface {
	Applied(h MuxHost, slot uint32, cfg forwarding.Instance, t *forwarding.Table) error
}

// Inheritor is an InstanceState that carries something over from the
// instance it replaces when an instance is loaded again under the same
// name (AWFD: the class record the store gave the old one). It is called
// before Install, with the old instance's state (never nil).
type Inheritor interface {
	Inherit(old InstanceState)
}

// CounterSet names per-CPU decision counters a strategy's C code keeps:
// the map, the enum whose enumerators name its slots (prefix cut off),
// and the Prometheus counter the mux daemon exports them as.
type CounterSet struct {
	Map, Enum, Prefix string
	Metric, Help      string
}

// Counted is a MuxStrategy whose C code keeps decision counters.
type Counted interface {
	Counters() []CounterSet
}

// registry holds each strategy's mux side.
var registry = forwarding.NewRegistry[MuxStrategy]("muxspi")

// Register adds name's mux side; a strategy package calls it from init().
func Register(name forwarding.Strategy, s MuxStrategy) { registry.Register(name, s) }

// Lookup is the registered mux side of name.
func Lookup(name forwarding.Strategy) (MuxStrategy, bool) { return registry.Lookup(name) }

// All is every registered mux side's name, sorted.
func All() []forwarding.Strategy { return registry.Names() }
