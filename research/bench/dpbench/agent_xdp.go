package dpbench

import (
	"github.com/beamer-lb/beamer/research/netlab"
)

const xdpPass = 2

// agentXDPRows measures the agent's XDP fast path (for servers whose NIC
// runs XDP natively) beside the tc rows: the common case decapsulated in
// XDP, the floor of decapsulation in XDP, and what the XDP program adds to a
// packet it leaves for the tc program (a chainable one). XDP rows are netted
// against the empty XDP program.
func agentXDPRows(ns *netlab.Namespace, a *benchAgent, base *agentBaseline, ifindex int, steady, chainable []byte, o Options, add func(string, int, int, trial, string) error) error {
	ctx := func(f []byte) any { return xdpMD{DataEnd: uint32(len(f)), IngressIfindex: uint32(ifindex)} }
	for _, r := range []struct {
		name, counter, unmoved, method string
		t                              trial
	}{
		{"decap-floor-xdp", "", "", "XDP: moves the Ethernet header over a 36-byte outer header and puts the header back, nothing else",
			trial{prog: a.XDPDecapFloorProgram(), single: a.XDPDecapFloorProgram(), frame: steady}},
		{"strip-floor-xdp", "", "", "XDP, per packet only: moves the Ethernet header over a 36-byte outer header and passes the packet up, nothing else",
			trial{single: a.XDPStripFloorProgram(), frame: steady}},
		{"strip-floor-xdp-insns", "", "", "XDP, per packet only: strip-floor-xdp after 200 dependent ALU instructions (what a path's length costs)",
			trial{single: a.x.XDPStripFloorInsns, frame: steady}},
		{"strip-floor-xdp-data", "", "", "XDP, per packet only: strip-floor-xdp after reading every map and data section the fast path reads, with its two counter writes (what its memory costs)",
			trial{single: a.x.XDPStripFloorData, frame: steady}},
		{"agent-xdp-local", "xdp_decap", "", "XDP fast path: packet of a local connection whose bucket has not moved, decapsulated in XDP (restored after each run)",
			trial{prog: a.XDPBenchProgram(), single: a.XDPProgram(), frame: steady}},
		{"agent-xdp-pass", "", "xdp_decap", "XDP fast path on a packet it leaves to tc (a chainable one): its added cost before the tc rows",
			trial{prog: a.XDPBenchProgram(), single: a.XDPProgram(), frame: chainable}},
	} {
		t := r.t
		t.ns, t.ctx, t.want, t.repeat, t.packets, t.read = ns, ctx(t.frame), xdpPass, o.Repeat, o.PerPacket, a.Counters
		t.counter, t.unmoved = r.counter, r.unmoved
		if base != nil && t.prog == a.XDPBenchProgram() {
			t.base, t.baseSingle = base.XDPBenchProgram(), base.XDPProgram()
		}
		if err := add(r.name, 1, 0, t, "test run; "+r.method); err != nil {
			return err
		}
	}
	return nil
}
