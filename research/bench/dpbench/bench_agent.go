package dpbench

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/cilium/ebpf"
)

// The benchmark build of the agent (bpf/bench/agent_bench.c,
// agentbench_bpfel.o here): the production programs plus wrappers that
// restore the packet after each run, and floors. dataplane.LoadAgent loads
// it as its own build (AgentOptions.Spec), so every program here runs on
// the agent's maps.

// agentExtras are the programs the benchmark build adds.
type agentExtras struct {
	Bench *ebpf.Program `ebpf:"beamer_agent_bench"`
	Empty *ebpf.Program `ebpf:"empty_tc_bench"`
	Decap *ebpf.Program `ebpf:"decap_floor_bench"`
	// Cheetah's rewrites, restored after each run.
	CheetahEgress  *ebpf.Program `ebpf:"cheetah_egress_bench"`
	CheetahIngress *ebpf.Program `ebpf:"cheetah_ingress_bench"`
	// The XDP fast path's.
	XDPBench      *ebpf.Program `ebpf:"beamer_agent_xdp_bench"`
	XDPDecapFloor *ebpf.Program `ebpf:"decap_floor_xdp_bench"`
	XDPStripFloor *ebpf.Program `ebpf:"strip_floor_xdp_bench"`
	// What the XDP fast path's cost above its floor is made of: the floor
	// after 200 dependent ALU instructions, and after the fast path's
	// reads and counter writes.
	XDPStripFloorInsns *ebpf.Program `ebpf:"strip_floor_xdp_insns_bench"`
	XDPStripFloorData  *ebpf.Program `ebpf:"strip_floor_xdp_data_bench"`
	StripFloor         *ebpf.Program `ebpf:"strip_floor_tc_bench"` // tc's
	// The IPv6 paths'.
	Bench6    *ebpf.Program `ebpf:"beamer_agent6_bench"`
	XDPBench6 *ebpf.Program `ebpf:"beamer_agent6_xdp_bench"`
}

// benchAgent is the benchmark build of the agent.
type benchAgent struct {
	*dataplane.Agent
	x agentExtras
}

// loadBenchAgent loads the benchmark build of the agent with opts.
func loadBenchAgent(opts dataplane.AgentOptions) (*benchAgent, error) {
	spec, err := loadAgentBench()
	if err != nil {
		return nil, err
	}
	opts.Spec = spec
	a, err := dataplane.LoadAgent(opts)
	if err != nil {
		return nil, err
	}
	b := &benchAgent{Agent: a}
	if err := assignFrom(a.Collection(), &b.x); err != nil {
		a.Close()
		return nil, fmt.Errorf("the agent's benchmark build: %w", err)
	}
	return b, nil
}

// BenchProgram is the agent wrapped to restore the packet.
func (a *benchAgent) BenchProgram() *ebpf.Program { return a.x.Bench }

// Bench6Program is the agent's IPv6 path wrapped to restore the packet.
func (a *benchAgent) Bench6Program() *ebpf.Program { return a.x.Bench6 }

// XDPBench6Program is the XDP fast path's IPv6 twin wrapped to restore the
// packet.
func (a *benchAgent) XDPBench6Program() *ebpf.Program { return a.x.XDPBench6 }

// EmptyProgram returns TC_ACT_OK and nothing else.
func (a *benchAgent) EmptyProgram() *ebpf.Program { return a.x.Empty }

// DecapFloorProgram strips the outer header and puts it back: the cost of
// decapsulation alone.
func (a *benchAgent) DecapFloorProgram() *ebpf.Program { return a.x.Decap }

// CheetahEgressBench is the cookie writer wrapped to undo its rewrite
// after each run.
func (a *benchAgent) CheetahEgressBench() *ebpf.Program { return a.x.CheetahEgress }

// CheetahIngressBench is the agent wrapped to put back the outer header
// and the echo after each run.
func (a *benchAgent) CheetahIngressBench() *ebpf.Program { return a.x.CheetahIngress }

// XDPBenchProgram is the XDP fast path wrapped to put the outer header
// back after each run.
func (a *benchAgent) XDPBenchProgram() *ebpf.Program { return a.x.XDPBench }

// XDPDecapFloorProgram strips a 36-byte outer header in XDP and puts it
// back: the floor of decapsulation in XDP.
func (a *benchAgent) XDPDecapFloorProgram() *ebpf.Program { return a.x.XDPDecapFloor }

// XDPStripFloorProgram strips a 36-byte outer header in XDP and passes the
// packet up, nothing else and no undo: the honest floor of the XDP fast
// path, for the per-packet method only.
func (a *benchAgent) XDPStripFloorProgram() *ebpf.Program { return a.x.XDPStripFloor }

// StripFloorProgram strips a 36-byte outer header with
// bpf_skb_adjust_room and passes the packet up, no undo: the honest floor
// of the tc fast path, for the per-packet method only.
func (a *benchAgent) StripFloorProgram() *ebpf.Program { return a.x.StripFloor }
