package dpbench

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
)

// The compare mode of `beamer-lab bench dataplane`: a baseline build of the mux
// (an earlier commit's research/bench/dpbench/muxbench_bpfel.o — before
// that commit, pkg/dataplane/muxbench_bpfel.o — or one saved with
// `beamer-lab bench save-baseline`) is loaded beside the current one, in the same process, on
// the current one's maps — so both programs read the very same tables, and
// the only difference measured is the code. That needs the baseline to read
// the maps as this build writes them: a baseline whose maps differ in type,
// key, value or value layout is refused with the differences named (compare
// such builds with their own `beamer-lab bench dataplane` instead).

// MuxBenchObject is the benchmark build of the mux compiled into this
// binary: what `beamer-lab bench save-baseline` writes.
func MuxBenchObject() []byte { return bytes.Clone(_MuxBenchBytes) }

// muxBenchFile is where the benchmark build of the mux is committed.
const muxBenchFile = "research/bench/dpbench/muxbench_bpfel.o"

func muxBenchOrderVersion() *ebpf.VariableSpec {
	spec, err := loadMuxBench()
	if err != nil {
		return nil
	}
	return spec.Variables["bench_order_version"]
}

// muxBaseline is a baseline benchmark build loaded on a mux's maps.
type muxBaseline struct {
	// Private names the baseline's maps this build does not have, or
	// lays out otherwise (with how): the baseline got its own, empty
	// (loadBaseline).
	Private []string

	coll   *ebpf.Collection
	bench  *ebpf.Program
	bench6 *ebpf.Program // nil: a build without the IPv6 path
	prod   *ebpf.Program // its production program, for the per-packet method
	empty  *ebpf.Program
	flows  *ebpf.Variable
	key    *ebpf.Variable
}

// loadBaseline loads obj, a benchmark build of the mux, on b's maps. Its
// constants (mux address, limits) are copied from b.
func (b *benchMux) loadBaseline(obj []byte) (*muxBaseline, error) {
	spec, err := baselineSpec(obj, "mux", muxBenchFile, "beamer_mux_bench", "empty_bench", "beamer_mux")
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
	// Every map of this build is shared: the mux's, the scratch array (a
	// measuring build reads what the bench copied there) and the Maglev
	// rows' reference table. Its own: global data (constants copied below), the tail-call
	// targets of the IPv6 path (sharing mux6_prog would point this build's
	// tail calls at the baseline's programs).
	loaded := b.Collection()
	repl, private := baselineMaps(spec, cur, loaded.Maps, func(name string, ms *ebpf.MapSpec) bool {
		return strings.HasPrefix(name, ".") || ms.Type == ebpf.ProgramArray
	})
	if err := baselineCounters(spec, cur, "mux_counter"); err != nil {
		return nil, err
	}
	if err := baselineConstants(spec, loaded.Variables); err != nil {
		return nil, err
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		return nil, fmt.Errorf("loading the baseline object: %w", err)
	}
	return &muxBaseline{Private: private, coll: coll, bench: coll.Programs["beamer_mux_bench"], bench6: coll.Programs["beamer_mux6_bench"],
		empty: coll.Programs["empty_bench"], prod: coll.Programs["beamer_mux"], flows: coll.Variables["bench_flows"], key: coll.Variables["bench_key"]}, nil
}

// Bench6Program is the baseline's IPv6 path wrapped to undo its
// encapsulation; nil when the baseline predates the IPv6 path.
func (b *muxBaseline) Bench6Program() *ebpf.Program { return b.bench6 }

// BenchProgram is the baseline's mux wrapped to undo its encapsulation.
func (b *muxBaseline) BenchProgram() *ebpf.Program { return b.bench }

// Program is the baseline's production mux program (what the per-packet
// method runs, on a fresh packet each time).
func (b *muxBaseline) Program() *ebpf.Program { return b.prod }

// EmptyProgram is the baseline's empty program.
func (b *muxBaseline) EmptyProgram() *ebpf.Program { return b.empty }

// SetBenchFlows is benchMux.SetBenchFlows for the baseline.
func (b *muxBaseline) SetBenchFlows(n uint32) error { return b.flows.Set(n) }

// SetBenchOrder is benchMux.SetBenchOrder for the baseline.
func (b *muxBaseline) SetBenchOrder(key uint32) error {
	if b.key == nil {
		return errors.New("baseline object has no bench_key")
	}
	return b.key.Set(key)
}

// Close unloads the baseline (the shared maps stay with their mux).
func (b *muxBaseline) Close() { b.coll.Close() }

// MaglevLRUProgram is the baseline's program with the reference
// connection table; nil when the baseline has none.
func (b *muxBaseline) MaglevLRUProgram() *ebpf.Program { return b.coll.Programs["maglev_lru_bench"] }

// MaglevLRUSingle is the baseline's per-packet program of the same
// (nil when the baseline has none).
func (b *muxBaseline) MaglevLRUSingle() *ebpf.Program { return b.coll.Programs["maglev_lru_single"] }
