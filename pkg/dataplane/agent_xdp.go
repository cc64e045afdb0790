package dataplane

import (
	"fmt"
	"net"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// The agent's XDP fast path (bpf/agent.c beamer_agent_xdp): on a server whose
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
