package dataplane

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"

	"github.com/beamer-lb/beamer/pkg/dataplane/agentspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// The agent loader knows strategies only through agentspi: each
// strategy's package (pkg/strategy/NAME) registers its agent side there
// (Cheetah: its keys per VIP, its cookie writer on egress, its counters).
// An Agent is the agentspi.AgentHost they are given.

var _ agentspi.AgentHost = (*Agent)(nil)

// Map finds a map of the loaded program by its C name, through the
// generated objects' `ebpf:"name"` tags, so that no strategy's map is
// named here.
func (a *Agent) Map(name string) (*ebpf.Map, error) {
	if m := mapTagged(reflect.ValueOf(&a.objs.agentMaps).Elem(), name); m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("dataplane: the agent program has no map %q", name)
}

// ProgramNamed finds a program of the loaded object by its C name.
func (a *Agent) ProgramNamed(name string) (*ebpf.Program, error) {
	if p := objectTagged[*ebpf.Program](reflect.ValueOf(&a.objs.agentPrograms).Elem(), name); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("dataplane: the agent object has no program %q", name)
}

// Variable finds a global variable of the loaded program by its C name.
func (a *Agent) Variable(name string) (*ebpf.Variable, error) {
	if v := objectTagged[*ebpf.Variable](reflect.ValueOf(&a.objs.agentVariables).Elem(), name); v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("dataplane: the agent program has no variable %q", name)
}

// objectTagged is the field of type T of struct v tagged name, or nil.
func objectTagged[T comparable](v reflect.Value, name string) T {
	var zero T
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("ebpf") != name {
			continue
		}
		if o, ok := v.Field(i).Interface().(T); ok {
			return o
		}
	}
	return zero
}

// Spec is the loaded program's collection spec.
func (a *Agent) Spec() *ebpf.CollectionSpec { return a.spec }

// AttachTC attaches prog to iface's tc egress or ingress (tcx), pinned in
// the pin directory's subdirectory sub (agentspi.AgentHost).
func (a *Agent) AttachTC(prog *ebpf.Program, iface string, egress bool, sub string) (link.Link, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	dir := ""
	if a.pinDir != "" {
		dir = filepath.Join(a.pinDir, sub)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	attach := ebpf.AttachTCXIngress
	if egress {
		attach = ebpf.AttachTCXEgress
	}
	l, _, err := adoptOrAttach(dir, prog, func() (link.Link, error) {
		return link.AttachTCX(link.TCXOptions{Program: prog, Attach: attach, Interface: ifi.Index})
	})
	return l, err
}

// DetachPinned detaches what an earlier agent pinned in the pin
// directory's subdirectory sub (agentspi.AgentHost).
func (a *Agent) DetachPinned(sub string) error {
	if a.pinDir == "" {
		return nil
	}
	return DetachPinned(filepath.Join(a.pinDir, sub))
}

// AgentStrategyCounters are the counters a built-in strategy's C code
// keeps in the agent (agentspi.Counted), for the daemon to export.
type AgentStrategyCounters struct {
	Strategy forwarding.Strategy
	agentspi.CounterSet
	Read func() (map[string]uint64, error)
}

// loadStrategyCounters names every built-in strategy's counters after its
// enum in the loaded spec.
func (a *Agent) loadStrategyCounters() error {
	for _, name := range agentspi.All() {
		s, _ := agentspi.Lookup(name)
		c, ok := s.(agentspi.Counted)
		if !ok {
			continue
		}
		for _, set := range c.Counters() {
			m, err := a.Map(set.Map)
			if err != nil {
				return err
			}
			cs, err := newCounterSet(a.spec, m, set.Enum, set.Prefix)
			if err != nil {
				return err
			}
			a.strategyCounters = append(a.strategyCounters, AgentStrategyCounters{Strategy: name, CounterSet: set, Read: cs.Read})
		}
	}
	return nil
}

// StrategyCounters lists the built-in strategies' counters.
func (a *Agent) StrategyCounters() []AgentStrategyCounters { return a.strategyCounters }

// CountersIn reads the strategy counter set kept in the map of that C
// name (agentspi.AgentHost).
func (a *Agent) CountersIn(mapName string) (map[string]uint64, error) {
	for _, c := range a.strategyCounters {
		if c.Map == mapName {
			return c.Read()
		}
	}
	return nil, fmt.Errorf("dataplane: no strategy built in counts in map %q", mapName)
}

// strategiesLoaded lets every built-in strategy look at the loaded agent
// (agentspi.Loaded) before its first packet.
func (a *Agent) strategiesLoaded() error {
	for _, name := range agentspi.All() {
		s, _ := agentspi.Lookup(name)
		if l, ok := s.(agentspi.Loaded); ok {
			if err := l.Loaded(a); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	return nil
}

// strategyPinnedState is every built-in strategy's pinned state
// (agentspi.PinnedState): maps by their directory under the pin
// directory.
func strategyPinnedState() map[string][]string {
	out := map[string][]string{}
	for _, name := range agentspi.All() {
		s, _ := agentspi.Lookup(name)
		if p, ok := s.(agentspi.PinnedState); ok {
			dir, maps := p.PinnedState()
			out[dir] = append(out[dir], maps...)
		}
	}
	return out
}

// AgentSpec is the embedded agent build's collection spec (a fresh copy):
// what the strategies' tests read their layouts from, as LoadAgent's
// hosts give them.
func AgentSpec() (*ebpf.CollectionSpec, error) { return loadAgent() }
