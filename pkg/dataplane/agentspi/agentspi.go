// Package agentspi is the server agent's data plane strategy interface:
// what pkg/dataplane asks of a strategy when it loads, pins and inspects
// the tc agent (bpf/agent.c), and the registry a strategy's own package
// (pkg/strategy/NAME) adds itself to in init(). A strategy whose agent
// side is the shared program alone registers nothing.
//
// It imports no layer: a strategy package imports it, never pkg/dataplane,
// so dataplane's own tests can load every strategy (pkg/strategy/all)
// without an import cycle.
package agentspi

import (
	"io"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Strategy is the agent data plane's side of a strategy: a PinnedState,
// a Loaded, a Counted, an Inspected, or several of them.
type Strategy any

// AgentHost is what the loaded agent offers a strategy: its maps and
// programs by their names in bpf/, its spec, where it is pinned.
type AgentHost interface {
	// Map is a map of the loaded program by its C name (cheetah_vips, ...).
	Map(name string) (*ebpf.Map, error)
	// ProgramNamed is a program of the loaded object by its C name
	// (cheetah_egress, ...).
	ProgramNamed(name string) (*ebpf.Program, error)
	// Variable is a global variable of the loaded program by its C name
	// (cheetah_vips_in_use, ...).
	Variable(name string) (*ebpf.Variable, error)
	// Spec is the loaded program's collection spec, where a strategy reads
	// its struct layouts (never copies them by hand).
	Spec() *ebpf.CollectionSpec
	// PinDir is where the agent is pinned, "" when it is not.
	PinDir() string
	// CountersIn reads the counter set of a Counted strategy kept in the
	// map of that C name, summed over CPUs.
	CountersIn(mapName string) (map[string]uint64, error)
	// AttachTC attaches prog to the tc egress (or ingress) of iface
	// (tcx). With a pin directory the link is pinned in its subdirectory
	// sub, or a link an earlier agent pinned there gets prog swapped in,
	// so the program keeps running across a hitless restart.
	AttachTC(prog *ebpf.Program, iface string, egress bool, sub string) (link.Link, error)
	// DetachPinned detaches what an earlier agent left pinned in the pin
	// directory's subdirectory sub and removes it (nothing without a pin
	// directory, or nothing pinned there).
	DetachPinned(sub string) error
}

// PinnedState is a strategy with maps whose content must outlive any
// agent restart, also one that changes the VIPs or bucket counts (they
// are keyed by VIP address or socket, not by VIP slot): the agent pins
// them in the pin directory's subdirectory Dir, apart from the
// layout-bound state, and a new agent adopts them whatever its layout.
type PinnedState interface {
	PinnedState() (dir string, maps []string)
}

// Loaded is a strategy that looks at the loaded agent before its first
// packet, with the maps it adopted from a predecessor (Cheetah: tells the
// ingress how many VIPs have keys).
type Loaded interface {
	Loaded(h AgentHost) error
}

// CounterSet names per-CPU counters a strategy's C code in the agent
// keeps: the map, the enum whose enumerators name its slots (prefix cut
// off), the Prometheus counter the agent daemon exports them as (label
// "decision"), and the key of `beamer agent inspect`'s JSON that shows
// them.
type CounterSet struct {
	Map, Enum, Prefix string
	Metric, Help      string
	Key               string
}

// Counted is a strategy whose C code in the agent keeps counters.
type Counted interface {
	Counters() []CounterSet
}

// InspectHost is a pinned agent as `beamer agent inspect` reads it,
// read-only.
type InspectHost interface {
	// Map is the pinned agent's map of that C name, checked against this
	// build: the one in the strategy's PinnedState directory if pinned
	// there, else the program's; nil (no error) when there is none.
	Map(name string) (*ebpf.Map, error)
	Spec() *ebpf.CollectionSpec
}

// Inspection is a strategy's part of `beamer agent inspect`: fields of
// the JSON object beside the agent's own, by key (empty: nothing to
// show; then its counters are left out of the text too), and the text
// shown after the VIP table (nil: none).
type Inspection struct {
	Fields map[string]any
	Text   func(w io.Writer)
}

// Inspected is a strategy with state of its own in the agent that
// `beamer agent inspect` shows.
type Inspected interface {
	Inspect(h InspectHost) (Inspection, error)
}

// registry holds each strategy's agent side.
var registry = forwarding.NewRegistry[Strategy]("agentspi")

// Register adds name's agent side; a strategy package calls it from init().
func Register(name forwarding.Strategy, s Strategy) { registry.Register(name, s) }

// Lookup is the registered agent side of name.
func Lookup(name forwarding.Strategy) (Strategy, bool) { return registry.Lookup(name) }

// All is every registered agent side's name, sorted.
func All() []forwarding.Strategy { return registry.Names() }
