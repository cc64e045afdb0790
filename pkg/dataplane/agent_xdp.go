package dataplane

import (
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// The agent's XDP fast path (bpf/include/agent_xdp.h): on a server whose
// NIC runs XDP natively it decapsulates the common case — SYNs, packets
// without the option, and packets from a mux at the newest generation with
// no previous owner to chain to — before the kernel builds a socket
// buffer, and passes everything else unchanged to the tc program, which
// stays attached and decides the rest as before.

// XDPProgram is the agent's XDP fast path, for attaching or test runs.
func (a *Agent) XDPProgram() *ebpf.Program { return a.objs.BeamerAgentXdp }

// AttachXDP attaches the XDP fast path to the named interface in the given
// mode. Attach (tc) must be attached too: this path only takes the common
// case. In XDPDriver mode it fails on a NIC without native XDP; the tc
// program then serves alone (see agentd's xdp setting). The link is not
// pinned: across a restart of the daemon the tc program serves alone until
// the new one attaches its XDP path again.
func (a *Agent) AttachXDP(iface string, mode XDPMode) (link.Link, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	flags := link.XDPDriverMode
	if mode == XDPGeneric {
		flags = link.XDPGenericMode
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: a.objs.BeamerAgentXdp, Interface: ifi.Index, Flags: flags})
	if err != nil {
		return nil, fmt.Errorf("attaching the agent's XDP path to %s: %w", iface, err)
	}
	return l, nil
}

// agentXDPBench are the XDP programs of the agent's benchmark build.
type agentXDPBench struct {
	XDPBench      *ebpf.Program `ebpf:"beamer_agent_xdp_bench"`
	XDPDecapFloor *ebpf.Program `ebpf:"decap_floor_xdp_bench"`
	XDPStripFloor *ebpf.Program `ebpf:"strip_floor_xdp_bench"`
	StripFloor    *ebpf.Program `ebpf:"strip_floor_tc_bench"` // tc's (bpf/bench/agent_bench.c)
}

func (b *agentXDPBench) close() {
	for _, p := range []*ebpf.Program{b.XDPBench, b.XDPDecapFloor, b.XDPStripFloor, b.StripFloor} {
		if p != nil {
			p.Close()
		}
	}
}

// XDPBenchProgram is the XDP fast path wrapped to put the outer header back
// after each run (benchmark build).
func (a *Agent) XDPBenchProgram() *ebpf.Program { return a.bench.XDPBench }

// XDPDecapFloorProgram strips a 36-byte outer header in XDP and puts it
// back: the floor of decapsulation in XDP (benchmark build).
func (a *Agent) XDPDecapFloorProgram() *ebpf.Program { return a.bench.XDPDecapFloor }

// XDPStripFloorProgram strips a 36-byte outer header in XDP and passes the
// packet up, nothing else and no undo: the honest floor of the XDP fast
// path, for the per-packet method only (benchmark build).
func (a *Agent) XDPStripFloorProgram() *ebpf.Program { return a.bench.XDPStripFloor }

// StripFloorProgram strips a 36-byte outer header with
// bpf_skb_adjust_room and passes the packet up, no undo: the honest floor
// of the tc fast path, for the per-packet method only (benchmark build).
func (a *Agent) StripFloorProgram() *ebpf.Program { return a.bench.StripFloor }
