package dpbench

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// What the compare modes (baseline_mux.go, baseline_agent.go) share: a
// baseline object is loaded on the current build's maps, so both read the
// same state and only the code differs.

// baselineMaps sets spec (a baseline object) up to share this build's
// maps: every map of spec that this build has with the same layout (cur is
// this build's benchmark spec, have its loaded maps by name: the current
// build's dataplane collection) is replaced
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
// named in the refusal: where this build keeps it, or where a build
// before research/bench/dpbench kept it, pkg/dataplane/).
func baselineSpec(obj []byte, what, file string, progs ...string) (*ebpf.CollectionSpec, error) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(obj))
	if err != nil {
		return nil, fmt.Errorf("baseline object: %w", err)
	}
	for _, p := range progs {
		if spec.Programs[p] == nil {
			return nil, fmt.Errorf("baseline object has no program %s: not a benchmark build of the %s (%s, or pkg/dataplane/%s of older commits)", p, what, file, path.Base(file))
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

// mapDifference says how a baseline's map differs from this build's ("":
// the same shape and value layout; sizes of the map itself may differ).
func mapDifference(a, b *ebpf.MapSpec) string {
	if b == nil {
		return "not in this build"
	}
	if a.Type != b.Type || a.KeySize != b.KeySize || a.ValueSize != b.ValueSize {
		return fmt.Sprintf("%v key %d value %d here %v key %d value %d", a.Type, a.KeySize, a.ValueSize, b.Type, b.KeySize, b.ValueSize)
	}
	if layout(a.Value) != layout(b.Value) {
		return fmt.Sprintf("value layout %s, here %s", layout(a.Value), layout(b.Value))
	}
	if (a.InnerMap == nil) != (b.InnerMap == nil) {
		return "map of maps in one build only"
	}
	if a.InnerMap != nil {
		if d := mapDifference(a.InnerMap, b.InnerMap); d != "" {
			return "inner map: " + d
		}
	}
	return ""
}

// typeDifference compares a named type of both builds.
func typeDifference(a, b *btf.Spec, name string) string {
	var ta, tb btf.Type
	ea, eb := a.TypeByName(name, &ta), b.TypeByName(name, &tb)
	if ea != nil || eb != nil {
		if (ea == nil) != (eb == nil) {
			return fmt.Sprintf("type %s: in one build only", name)
		}
		return ""
	}
	if la, lb := layout(ta), layout(tb); la != lb {
		return fmt.Sprintf("type %s: %s, here %s", name, la, lb)
	}
	return ""
}

// layout renders a BTF type's memory layout: struct members by name,
// offset and size, enum values; nested structs recursively.
func layout(t btf.Type) string {
	switch t := btf.UnderlyingType(t).(type) {
	case nil:
		return "?"
	case *btf.Struct:
		var b strings.Builder
		b.WriteString("{")
		for _, m := range t.Members {
			sz, _ := btf.Sizeof(m.Type)
			fmt.Fprintf(&b, "%s@%d:%d%s ", m.Name, m.Offset.Bytes(), sz, sublayout(m.Type))
		}
		b.WriteString("}")
		return b.String()
	case *btf.Union:
		var b strings.Builder
		b.WriteString("union{")
		for _, m := range t.Members {
			sz, _ := btf.Sizeof(m.Type)
			fmt.Fprintf(&b, "%s:%d%s ", m.Name, sz, sublayout(m.Type))
		}
		b.WriteString("}")
		return b.String()
	case *btf.Enum:
		var b strings.Builder
		for _, v := range t.Values {
			fmt.Fprintf(&b, "%s=%d ", v.Name, v.Value)
		}
		return b.String()
	case *btf.Array:
		return fmt.Sprintf("[%d]%s", t.Nelems, layout(t.Type))
	default:
		sz, _ := btf.Sizeof(t)
		return fmt.Sprint(sz)
	}
}

func sublayout(t btf.Type) string {
	switch btf.UnderlyingType(t).(type) {
	case *btf.Struct, *btf.Union, *btf.Array:
		return layout(t)
	}
	return ""
}
