package dpbench

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
)

// The agent's compare mode of `beamer-lab bench dataplane --compare-agent`: a
// baseline benchmark build of the agent (an earlier commit's
// research/bench/dpbench/agentbench_bpfel.o, before that commit
// pkg/dataplane/agentbench_bpfel.o) is loaded beside the current one on its maps, as the
// mux's baseline is (baseline_mux.go), so both read the same state and
// only the code differs. A baseline whose counters differ is refused; maps
// this build lacks or lays out otherwise are the baseline's own
// (baselineMaps).

// AgentBenchObject is the benchmark build of the agent compiled into this
// binary (the bytes of agentBenchFile of its commit).
func AgentBenchObject() []byte { return bytes.Clone(_AgentBenchBytes) }

// agentBenchFile is where the benchmark build of the agent is committed.
const agentBenchFile = "research/bench/dpbench/agentbench_bpfel.o"

// agentBaseline is a baseline benchmark build of the agent loaded on an
// agent's maps.
type agentBaseline struct {
	// Private names the baseline's maps this build does not have, or lays
	// out otherwise: the baseline's own, empty (baselineMaps).
	Private []string

	coll *ebpf.Collection
}

// agentBaselineOwn are the maps a baseline keeps for itself: the
// benchmark wrapper's scratch, and tail-call arrays (sharing one would
// point this build's tail calls at the baseline's programs).
func agentBaselineOwn(name string, ms *ebpf.MapSpec) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "bench_") || ms.Type == ebpf.ProgramArray
}

// loadBaseline loads obj, a benchmark build of the agent, on a's maps. Its
// constants (addresses, bounds) are copied from a.
func (a *benchAgent) loadBaseline(obj []byte) (*agentBaseline, error) {
	spec, err := baselineSpec(obj, "agent", agentBenchFile, "beamer_agent", "beamer_agent_bench", "beamer_agent_xdp", "beamer_agent_xdp_bench")
	if err != nil {
		return nil, err
	}
	cur, err := loadAgentBench()
	if err != nil {
		return nil, err
	}
	loaded := a.Collection()
	repl, private := baselineMaps(spec, cur, loaded.Maps, agentBaselineOwn)
	if err := baselineCounters(spec, cur, "agent_counter"); err != nil {
		return nil, err
	}
	if err := baselineConstants(spec, loaded.Variables); err != nil {
		return nil, err
	}
	// Only the IPv4 programs are measured: the others are not loaded, nor
	// put in the tail-call arrays (an IPv6 frame's tail call then fails,
	// and the program passes it).
	for _, ms := range spec.Maps {
		if ms.Type == ebpf.ProgramArray {
			ms.Contents = nil
		}
	}
	for name := range spec.Programs {
		switch name {
		case "beamer_agent", "beamer_agent_bench", "beamer_agent_xdp", "beamer_agent_xdp_bench":
		default:
			delete(spec.Programs, name)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
	if err != nil {
		return nil, fmt.Errorf("loading the baseline object: %w", err)
	}
	return &agentBaseline{Private: private, coll: coll}, nil
}

// Program is the baseline's tc program (production build).
func (b *agentBaseline) Program() *ebpf.Program { return b.coll.Programs["beamer_agent"] }

// BenchProgram is the baseline's tc program wrapped to restore the packet.
func (b *agentBaseline) BenchProgram() *ebpf.Program { return b.coll.Programs["beamer_agent_bench"] }

// XDPProgram is the baseline's XDP fast path (production build).
func (b *agentBaseline) XDPProgram() *ebpf.Program { return b.coll.Programs["beamer_agent_xdp"] }

// XDPBenchProgram is the baseline's XDP fast path wrapped to restore the packet.
func (b *agentBaseline) XDPBenchProgram() *ebpf.Program {
	return b.coll.Programs["beamer_agent_xdp_bench"]
}

// Close unloads the baseline (the shared maps stay with their agent).
func (b *agentBaseline) Close() { b.coll.Close() }
