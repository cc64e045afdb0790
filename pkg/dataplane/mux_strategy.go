package dataplane

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
)

// The mux loader knows strategies only through muxspi: each strategy's
// package (pkg/strategy/NAME) registers its mux side there. The VIP record
// carries forwarding.Strategy.Code, which the program's one dispatch
// (bpf/mux.c) reads.

// muxStrategyOf is the registered mux side of cfg's strategy.
func muxStrategyOf(cfg forwarding.Instance) muxspi.MuxStrategy {
	if s, ok := muxspi.Lookup(cfg.Strategy); ok {
		return s
	}
	return unsupported{cfg.Strategy}
}

// muxHost is the loaded mux as its strategies see it (muxspi.MuxHost);
// its methods run with m.mu held, as Prepare's and the states' calls do.
type muxHost struct{ m *Mux }

func (h muxHost) EnsureConnTrack() error     { return h.m.ensureConnTrack() }
func (h muxHost) Spec() *ebpf.CollectionSpec { return h.m.spec }

// Map finds a map of the loaded program by its C name, through the
// generated objects' `ebpf:"name"` tags, so that no strategy's map is
// named here.
func (h muxHost) Map(name string) (*ebpf.Map, error) {
	if m := mapTagged(reflect.ValueOf(&h.m.objs.muxMaps).Elem(), name); m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("dataplane: the mux program has no map %q", name)
}

// mapTagged is the *ebpf.Map field of struct v tagged name, or nil.
func mapTagged(v reflect.Value, name string) *ebpf.Map {
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("ebpf") != name {
			continue
		}
		if m, ok := v.Field(i).Interface().(*ebpf.Map); ok {
			return m
		}
	}
	return nil
}

// stateApplied tells the instance's state, if it watches tables, that its
// table is in its slot (installed or changed by a delta).
func (m *Mux) stateApplied(in *muxInstance) error {
	if w, ok := in.state.(muxspi.TableWatcher); ok {
		return w.Applied(muxHost{m}, in.slot, in.cfg, in.table)
	}
	return nil
}

// WithInstance runs f with the named instance's slot, applied generation
// and strategy state (nil: the strategy keeps none), under the mux's lock:
// how a strategy's own package reads or writes its per-instance maps
// outside a generation (AWFD's class record, Prism's keep-alive bits).
func (m *Mux) WithInstance(name string, f func(h muxspi.MuxHost, slot, generation uint32, st muxspi.InstanceState) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownInstance, name)
	}
	return f(muxHost{m}, in.slot, in.table.Generation, in.state)
}

// StrategyCounters are the decision counters of every strategy built in
// (muxspi.Counted), for the daemon to export.
type StrategyCounters struct {
	Strategy forwarding.Strategy
	muxspi.CounterSet
	Read func() (map[string]uint64, error)
}

// loadStrategyCounters names every built-in strategy's counters after its
// enum in the loaded spec.
func (m *Mux) loadStrategyCounters() error {
	for _, name := range muxspi.All() {
		s, _ := muxspi.Lookup(name)
		c, ok := s.(muxspi.Counted)
		if !ok {
			continue
		}
		for _, set := range c.Counters() {
			mp, err := muxHost{m}.Map(set.Map)
			if err != nil {
				return err
			}
			cs, err := newCounterSet(m.spec, mp, set.Enum, set.Prefix)
			if err != nil {
				return err
			}
			m.strategyCounters = append(m.strategyCounters, StrategyCounters{Strategy: name, CounterSet: set, Read: cs.Read})
		}
	}
	return nil
}

// StrategyCounters lists the built-in strategies' decision counters.
func (m *Mux) StrategyCounters() []StrategyCounters { return m.strategyCounters }

// CountersOf reads the named strategy's decision counters (all its sets).
func (m *Mux) CountersOf(name forwarding.Strategy) (map[string]uint64, error) {
	out := map[string]uint64{}
	found := false
	for _, c := range m.strategyCounters {
		if c.Strategy != name {
			continue
		}
		found = true
		v, err := c.Read()
		if err != nil {
			return nil, err
		}
		for k, n := range v {
			out[k] += n
		}
	}
	if !found {
		return nil, fmt.Errorf("dataplane: strategy %q keeps no counters in this mux", name)
	}
	return out, nil
}

// unsupported is a strategy this build has no mux side for: instances of
// it are refused at load.
type unsupported struct{ name forwarding.Strategy }

func (u unsupported) Prepare(muxspi.MuxHost) error {
	return fmt.Errorf("dataplane: strategy %q is not built into this mux", u.name)
}
func (unsupported) Histories() bool { return false }
func (unsupported) NewState(forwarding.Instance, *forwarding.Table) (muxspi.InstanceState, error) {
	return nil, nil
}

// InstanceNames are the loaded instances of strategy s, sorted.
func (m *Mux) InstanceNames(s forwarding.Strategy) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for name, in := range m.instances {
		if in.cfg.Strategy == s {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// MuxSpec is the embedded mux build's collection spec (a fresh copy):
// what the strategies' tests read their layouts from, as LoadMux's hosts
// give them.
func MuxSpec() (*ebpf.CollectionSpec, error) { return loadMux() }
