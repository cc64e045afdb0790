package dataplane

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cilium/ebpf"
)

// What the compare modes (mux_baseline.go, agent_baseline.go) share: a
// baseline object is loaded on the current build's maps, so both read the
// same state and only the code differs.

// baselineMaps sets spec (a baseline object) up to share this build's
// maps: every map of spec that this build has with the same layout (cur is
// this build's benchmark spec, have its loaded maps by name) is replaced
// by this build's, sized as it is. A map this build does not have, or lays
// out otherwise, stays the baseline's own and empty; it is named in
// private (with how it differs), sorted. Where the baseline needed such a map
// filled, its rows' path counters do not move and the bench shows the
// baseline unverified rather than a wrong figure. own names the maps a
// baseline always keeps for itself (its global data, its tail-call
// arrays, its bench scratch).
func baselineMaps(spec, cur *ebpf.CollectionSpec, have map[string]*ebpf.Map, own func(string, *ebpf.MapSpec) bool) (repl map[string]*ebpf.Map, private []string) {
	repl = map[string]*ebpf.Map{}
	for name, ms := range spec.Maps {
		if own(name, ms) {
			continue
		}
		cm, ok := have[name]
		if !ok {
			private = append(private, name)
			continue
		}
		if d := mapDifference(ms, cur.Maps[name]); d != "" {
			private = append(private, fmt.Sprintf("%s (%s)", name, d))
			continue
		}
		// The map exists already: its own sizes are what the loader checks.
		ms.MaxEntries, ms.Flags = cm.MaxEntries(), cm.Flags()
		repl[name] = cm
	}
	slices.Sort(private)
	return repl, private
}

// baselineSpec parses obj, a baseline object, and refuses it unless it has
// every program of progs: a benchmark build of what (its object file
// named in the refusal).
func baselineSpec(obj []byte, what, file string, progs ...string) (*ebpf.CollectionSpec, error) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
	if err != nil {
		return nil, fmt.Errorf("baseline object: %w", err)
	}
	for _, p := range progs {
		if spec.Programs[p] == nil {
			return nil, fmt.Errorf("baseline object has no program %s: not a benchmark build of the %s (%s)", p, what, file)
		}
	}
	return spec, nil
}

// baselineConstants copies this build's load-time constants (addresses,
// bounds) into the baseline's of the same name and size.
func baselineConstants(spec *ebpf.CollectionSpec, vars map[string]*ebpf.Variable) error {
	for name, vs := range spec.Variables {
		v, have := vars[name]
		if !vs.Constant() || !have || v.Size() != vs.Size() {
			continue
		}
		buf := make([]byte, v.Size())
		if err := v.Get(buf); err != nil {
			return fmt.Errorf("constant %s: %w", name, err)
		}
		if err := vs.Set(buf); err != nil {
			return fmt.Errorf("baseline constant %s: %w", name, err)
		}
	}
	return nil
}

// baselineCounters refuses a baseline whose decision counters (the enum
// enumName) differ from this build's: they are read through this build's.
func baselineCounters(spec, cur *ebpf.CollectionSpec, enumName string) error {
	if d := typeDifference(spec.Types, cur.Types, enumName); d != "" {
		return fmt.Errorf("the baseline object counts otherwise than this build:\n  %s", d)
	}
	return nil
}
