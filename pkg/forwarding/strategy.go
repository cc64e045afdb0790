package forwarding

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Strategy names how muxes of an instance pick servers.
type Strategy string

// Every strategy the project carries. A name is reserved here, with its code
// in the mux program (enum strategy, bpf/include/mux_maps.h), before its
// implementation lands, so that the strategies built in parallel never
// collide; only the strategies registered (RegisterStrategy) are accepted
// in a configuration.
const (
	// StrategyBeamer is stable hashing into buckets with daisy chaining.
	StrategyBeamer Strategy = "beamer"
	// StrategyMaglev is Maglev hashing with a per-CPU connection table.
	StrategyMaglev Strategy = "maglev"
	// StrategyPrism is ECMP bins plus a migrated-connection table (Prism).
	StrategyPrism Strategy = "prism"
	// StrategyCheetah is Cheetah: the server in a cookie the client echoes.
	StrategyCheetah Strategy = "cheetah"
	// StrategyAWFD is adaptive weighted flow dispatching (AWFD).
	StrategyAWFD Strategy = "awfd"
)

// StrategyCode is a strategy's value of enum strategy in the mux program's
// VIP record. The values are fixed: muxes and pinned maps keep them across
// upgrades.
var strategyCodes = map[Strategy]uint8{
	StrategyBeamer:  1,
	StrategyMaglev:  2,
	StrategyPrism:   3,
	StrategyCheetah: 4,
	StrategyAWFD:    5,
}

// StrategySpec is what the forwarding layer knows of a strategy: the
// configuration rules and the capabilities that only it has, which shared
// code (configuration files, ctl, the declarative document, benchmarks)
// asks instead of comparing names. Everything else a strategy decides
// lives in its own type in the controller, the mux loader, the model and
// the lab.
type StrategySpec struct {
	Name Strategy
	// Check returns what is wrong with the strategy's own part of a
	// configuration (e.g. a Maglev table size must be prime), or nil.
	Check func(in *Instance) error
	// CheckServer, if set, returns what is wrong with a server id under
	// this strategy (e.g. a Cheetah cookie carries 15 bits of it), or nil;
	// Instance.CheckServer asks it.
	CheckServer func(id ServerID) error
	// HasOptions tells whether a configuration carries the strategy's own
	// options block (json "prism", "cheetah", "awfd"); nil: it has none.
	// Another strategy's instance must not carry it.
	HasOptions func(in *Instance) bool
	// OptionsRequired: an instance of the strategy must carry its options
	// block (Cheetah: its policy and keys have no defaults).
	OptionsRequired bool
	// FillDefaults writes the strategy's options block with every default
	// filled in, as the controller and the muxes read it (nil: nothing).
	FillDefaults func(in *Instance)
	// IPv6: its mux and agent paths handle IPv6 packets end to end.
	IPv6 bool
	// MaglevTable: the bucket array is a Maglev lookup table (prime size,
	// filled by assign.MaglevTable; small by default).
	MaglevTable bool
	// ConnTable: its muxes keep per-CPU connection tables, so the bucket
	// entry places only a connection's first packet (what the mux
	// counts as forwarded is ct_hit plus ct_miss).
	ConnTable bool
	// ServerKeys: the servers of its instances take keys the controller
	// pushes (Cheetah's cookie keys).
	ServerKeys bool
	// StaticChainWindow is the chaining window an instance of a static mux
	// configuration gets when it leaves chain_window out (0: none).
	StaticChainWindow time.Duration
}

// DefaultStrategy is the strategy of a configuration that names none (as
// `ctl create` without --strategy).
const DefaultStrategy = StrategyBeamer

// OrDefault is s, or DefaultStrategy when s is empty.
func (s Strategy) OrDefault() Strategy {
	if s == "" {
		return DefaultStrategy
	}
	return s
}

// Spec is the registered strategy's spec; the zero spec (no capability)
// when s is not registered.
func (s Strategy) Spec() StrategySpec { return registered[s] }

// StrategiesWith lists the registered strategies that have a capability,
// sorted by their code, as "a or b" for messages.
func StrategiesWith(has func(StrategySpec) bool) string {
	var names []string
	for _, s := range Strategies() {
		if has(registered[s]) {
			names = append(names, string(s))
		}
	}
	return joinOr(names)
}

var registered = map[Strategy]StrategySpec{}

// RegisterStrategy makes a reserved strategy usable in configurations. It
// panics on a name that is not reserved above or registered twice: both are
// programming errors found at start.
func RegisterStrategy(s StrategySpec) {
	if _, ok := strategyCodes[s.Name]; !ok {
		panic(fmt.Sprintf("forwarding: strategy %q has no reserved code", s.Name))
	}
	if _, dup := registered[s.Name]; dup {
		panic(fmt.Sprintf("forwarding: strategy %q registered twice", s.Name))
	}
	registered[s.Name] = s
}

// Strategies lists the registered strategies, sorted by their code.
func Strategies() []Strategy {
	out := make([]Strategy, 0, len(registered))
	for s := range registered {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Strategy) int { return int(strategyCodes[a]) - int(strategyCodes[b]) })
	return out
}

// StrategyNames is the registered strategies as "a, b or c", for messages.
func StrategyNames() string {
	names := make([]string, 0, len(registered))
	for _, s := range Strategies() {
		names = append(names, string(s))
	}
	return joinOr(names)
}

// joinOr is names as "a, b or c".
func joinOr(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Known tells whether s is registered in this build.
func (s Strategy) Known() bool {
	_, ok := registered[s]
	return ok
}

// Code is the strategy's enum strategy value in the mux (0 if unknown).
func (s Strategy) Code() uint8 {
	if !s.Known() {
		return 0
	}
	return strategyCodes[s]
}

// checkStrategy validates the strategy's name and its own rules.
func (in *Instance) checkStrategy() error {
	spec, ok := registered[in.Strategy]
	if !ok {
		if _, reserved := strategyCodes[in.Strategy]; reserved {
			return fmt.Errorf("strategy %q is not built into this binary; want %s", in.Strategy, StrategyNames())
		}
		return fmt.Errorf("strategy %q is unknown; want %s", in.Strategy, StrategyNames())
	}
	for _, other := range Strategies() {
		if o := registered[other]; other != in.Strategy && o.HasOptions != nil && o.HasOptions(in) {
			return fmt.Errorf("options for strategy %q given to a %q instance", other, in.Strategy)
		}
	}
	if spec.Check != nil {
		return spec.Check(in)
	}
	return nil
}
