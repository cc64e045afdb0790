package dpbench

import (
	"fmt"
	"io"
)

// The agent's honest floors (issue 27): strip-floor-tc and strip-floor-xdp
// only strip the outer header and hand the packet up, without the undo
// that decap-floor and decap-floor-xdp need for the batched method, so
// they are measured per packet only, and the fast paths are compared with
// them per packet, net of the empty program.

// agentFloorPairs are the fast-path rows and the floor of their hook.
var agentFloorPairs = []struct{ row, floor, hook string }{
	{"agent-local", "strip-floor-tc", "tc"},
	{"agent-xdp-local", "strip-floor-xdp", "XDP"},
}

// overFloor is row / floor per packet, net: median and quiet (0: missing).
func (r *Report) overFloor(row, floor string) (median, quiet float64) {
	p, f := r.find(row, 0, 0), r.find(floor, 0, 0)
	if p == nil || f == nil || p.PerPacket == nil || f.PerPacket == nil {
		return 0, 0
	}
	if f.PerPacket.NsNet > 0 {
		median = p.PerPacket.NsNet / f.PerPacket.NsNet
	}
	if f.PerPacket.NsNetQuiet > 0 {
		quiet = p.PerPacket.NsNetQuiet / f.PerPacket.NsNetQuiet
	}
	return median, quiet
}

func (rep *Report) agentFloorRatios() {
	rt := &rep.Ratios
	rt.AgentLocalOverStripFloorTC, rt.AgentLocalOverStripFloorTCQuiet = rep.overFloor("agent-local", "strip-floor-tc")
	rt.AgentXDPLocalOverStripFloor, rt.AgentXDPLocalOverStripFloorQuiet = rep.overFloor("agent-xdp-local", "strip-floor-xdp")
}

// agentFloorTargets are issue 27's agent targets: the fast path of each
// hook ≤ 2 × the strip floor of that hook, per packet, net.
func (r *Report) agentFloorTargets() []Target {
	var out []Target
	for _, c := range agentFloorPairs {
		m, q := r.overFloor(c.row, c.floor)
		if m == 0 || q == 0 {
			continue
		}
		out = append(out, Target{What: fmt.Sprintf("agent fast path (%s) ≤ 2 × %s, per packet (net / net, issue 27)", c.hook, c.floor),
			Batched: "–", PerPacket: fmt.Sprintf("%.1f × / %.1f ×", m, q), Verdict: verdictOf(m <= 2, m <= 2, q <= 2, q <= 2)})
	}
	return out
}

// printAgentBaseline writes the agent compare mode's per-packet figures:
// the current and the baseline production program of each agent row.
func (r *Report) printAgentBaseline(w io.Writer) {
	if r.AgentBaseline == "" {
		return
	}
	fmt.Fprintf(w, "agent baseline %s, per packet, net median / quiet (current vs baseline, in alternation on the same maps):\n", r.AgentBaseline)
	for _, p := range r.Programs {
		if p.PerPacket == nil || p.BaselinePerPacket == nil {
			continue
		}
		fmt.Fprintf(w, "  %-24s %6.1f / %6.1f   baseline %6.1f / %6.1f   (%+.1f ns median, %+.1f quiet; baseline verified %v)\n", p.Name,
			p.PerPacket.NsNet, p.PerPacket.NsNetQuiet, p.BaselinePerPacket.NsNet, p.BaselinePerPacket.NsNetQuiet,
			p.PerPacket.NsNet-p.BaselinePerPacket.NsNet, p.PerPacket.NsNetQuiet-p.BaselinePerPacket.NsNetQuiet, p.BaselinePerPacket.PathVerified)
	}
}
