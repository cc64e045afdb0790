package dataplane

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// The compare mode of `beamer-lab bench dataplane`: a baseline build of the mux
// (an earlier commit's muxbench_bpfel.o, or one saved with `beamer-lab bench
// save-baseline`) is loaded beside the current one, in the same process, on
// the current one's maps — so both programs read the very same tables, and
// the only difference measured is the code. That needs the baseline to read
// the maps as this build writes them: a baseline whose maps differ in type,
// key, value or value layout is refused with the differences named (compare
// such builds with their own `beamer-lab bench dataplane` instead).

// MuxBenchObject is the benchmark build of the mux compiled into this
// binary: what `beamer-lab bench save-baseline` writes.
func MuxBenchObject() []byte { return bytes.Clone(_MuxBenchBytes) }

func muxBenchOrderVersion() *ebpf.VariableSpec {
	spec, err := loadMuxBench()
	if err != nil {
		return nil
	}
	return spec.Variables["bench_order_version"]
}

// SetBenchOrder selects the benchmark build's visiting order (bench_key in
// bpf/bench/mux_bench.c): research/bench/dpbench fills connection tables in one order
// and measures in another.
func (m *Mux) SetBenchOrder(key uint32) error { return m.bench.Key.Set(key) }

// MuxBaseline is a baseline benchmark build loaded on a Mux's maps.
type MuxBaseline struct {
	// Private names the baseline's maps this build does not have, or
	// lays out otherwise (with how): the baseline got its own, empty
	// (LoadBaseline).
	Private []string

	coll   *ebpf.Collection
	bench  *ebpf.Program
	bench6 *ebpf.Program // nil: a build without the IPv6 path
	prod   *ebpf.Program // its production program, for the per-packet method
	empty  *ebpf.Program
	flows  *ebpf.Variable
	key    *ebpf.Variable
}

// LoadBaseline loads obj, a benchmark build of the mux, on m's maps (m
// must be a benchmark build too). Its constants (mux address, limits) are
// copied from m.
func (m *Mux) LoadBaseline(obj []byte) (*MuxBaseline, error) {
	if m.bench.Bench == nil {
		return nil, errors.New("the compare mode needs the benchmark build of the current mux")
	}
	spec, err := baselineSpec(obj, "mux", "pkg/dataplane/muxbench_bpfel.o", "beamer_mux_bench", "empty_bench", "beamer_mux")
	if err != nil {
		return nil, err
	}
	if spec.Variables["bench_flows"] == nil {
		return nil, errors.New("baseline object has no bench_flows variable: not a benchmark build of the mux")
	}
	// Both must visit the flows in the same order, or the figures differ by
	// method (an older build replays them in insertion order).
	if v := spec.Variables["bench_order_version"]; v == nil {
		return nil, errors.New("baseline object visits its flows in insertion order (built before the random order): not comparable")
	} else if want := muxBenchOrderVersion(); want != nil {
		var got, cur uint32
		if err := v.Get(&got); err != nil || want.Get(&cur) != nil || got != cur {
			return nil, fmt.Errorf("baseline object visits its flows in order %d, this build in order %d: not comparable", got, cur)
		}
	}
	cur, err := loadMuxBench()
	if err != nil {
		return nil, err
	}
	maps := taggedFields[*ebpf.Map](&m.objs.muxMaps)
	maps["bench_scratch"] = m.bench.Scratch // a measuring build reads what the bench copied there
	if m.bench.CtLRU != nil {
		// The Maglev rows' reference table, bench build only.
		maps["conntrack_lru_bench"] = m.bench.CtLRU
	}
	// Its own: global data (constants copied below), the tail-call
	// targets of the IPv6 path (sharing mux6_prog would point this build's
	// tail calls at the baseline's programs).
	repl, private := baselineMaps(spec, cur, maps, func(name string, ms *ebpf.MapSpec) bool {
		return strings.HasPrefix(name, ".") || ms.Type == ebpf.ProgramArray
	})
	if err := baselineCounters(spec, cur, "mux_counter"); err != nil {
		return nil, err
	}
	if err := baselineConstants(spec, taggedFields[*ebpf.Variable](&m.objs.muxVariables)); err != nil {
		return nil, err
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		return nil, fmt.Errorf("loading the baseline object: %w", err)
	}
	return &MuxBaseline{Private: private, coll: coll, bench: coll.Programs["beamer_mux_bench"], bench6: coll.Programs["beamer_mux6_bench"],
		empty: coll.Programs["empty_bench"], prod: coll.Programs["beamer_mux"], flows: coll.Variables["bench_flows"], key: coll.Variables["bench_key"]}, nil
}

// Bench6Program is the baseline's IPv6 path wrapped to undo its
// encapsulation; nil when the baseline predates the IPv6 path.
func (b *MuxBaseline) Bench6Program() *ebpf.Program { return b.bench6 }

// BenchProgram is the baseline's mux wrapped to undo its encapsulation.
func (b *MuxBaseline) BenchProgram() *ebpf.Program { return b.bench }

// Program is the baseline's production mux program (what the per-packet
// method runs, on a fresh packet each time).
func (b *MuxBaseline) Program() *ebpf.Program { return b.prod }

// EmptyProgram is the baseline's empty program.
func (b *MuxBaseline) EmptyProgram() *ebpf.Program { return b.empty }

// SetBenchFlows is Mux.SetBenchFlows for the baseline.
func (b *MuxBaseline) SetBenchFlows(n uint32) error { return b.flows.Set(n) }

// SetBenchOrder is Mux.SetBenchOrder for the baseline.
func (b *MuxBaseline) SetBenchOrder(key uint32) error {
	if b.key == nil {
		return errors.New("baseline object has no bench_key")
	}
	return b.key.Set(key)
}

// Close unloads the baseline (the shared maps stay with their Mux).
func (b *MuxBaseline) Close() { b.coll.Close() }

// taggedFields maps the `ebpf:"name"` tags of a bpf2go struct to its fields.
func taggedFields[T any](s any) map[string]T {
	out := map[string]T{}
	v := reflect.ValueOf(s).Elem()
	for i := 0; i < v.NumField(); i++ {
		if tag := v.Type().Field(i).Tag.Get("ebpf"); tag != "" {
			if f, ok := v.Field(i).Interface().(T); ok {
				out[tag] = f
			}
		}
	}
	return out
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
