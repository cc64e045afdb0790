package dpbench

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// quickRows are the rows every run has.
var quickRows = []string{"empty", "floor", "encap-floor", "encap-floor-plain", "beamer-floor", "beamer-floor-counted", "beamer-floor-moved4", "lines-0", "lines-16", "rotation", "beamer", "beamer-mptcp", "beamer-fib", "maglev", "maglev-lru", "prism-empty", "prism-miss", "prism-hit",
	"empty-tc", "decap-floor", "agent-local", "agent-local-moved", "agent-chain", "agent-drop",
	"cheetah-cookie", "cheetah-cookie-general", "cheetah-syn-rr", "cheetah-fallback",
	"agent-cheetah-egress", "agent-cheetah-ingress", "decap-floor-xdp", "agent-xdp-local", "agent-xdp-pass",
	"strip-floor-tc", "strip-floor-xdp",
	"udp", "udp-moved1", "quic-cid", "quic-initial",
	"beamer-gue", "beamer-gue-moved1", "agent-local-gue", "agent-chain-gue", "agent-xdp-local-gue",
	"beamer-ipv6", "beamer-ipv6-moved1", "agent6-local", "agent6-local-moved", "agent6-chain", "agent-xdp-local-ipv6"}

// TestQuickRun is CI's smoke of `beamer-lab bench dataplane`: every program runs
// and took its intended path on every repetition, by both methods (the
// batched benchmark build and the production program one packet at a
// time). No timing is asserted.
func TestQuickRun(t *testing.T) {
	netlabtest.RequireRoot(t)
	rep, err := Run(Quick, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rep, false)
	if rep.Ratios.BeamerOverEncapFloor <= 0 || rep.Ratios.AgentLocalOverEmptyTC <= 0 || rep.Ratios.AgentXDPLocalOverEmpty <= 0 {
		t.Errorf("ratios: %+v", rep.Ratios)
	}
	if rep.Ratios.AgentLocalOverStripFloorTC == 0 || rep.Ratios.AgentXDPLocalOverStripFloor == 0 {
		t.Errorf("no agent / strip floor ratios: %+v", rep.Ratios)
	}
}

// TestQuickMaglevOnly: the Maglev-only run (bench dataplane --maglev-only)
// measures the two Maglev rows and nothing else, each path verified (the
// connection table's rows mostly hits).
func TestQuickMaglevOnly(t *testing.T) {
	netlabtest.RequireRoot(t)
	o := Quick
	o.MaglevOnly = true
	rep, err := Run(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range rep.Programs {
		names = append(names, p.Name)
		if !p.PathVerified || p.PerPacket == nil || !p.PerPacket.PathVerified {
			t.Errorf("%s: path not verified", p.Name)
		}
		if p.Name == "maglev" && p.HitShare < 0.9 {
			t.Errorf("maglev: hit share %.3f", p.HitShare)
		}
	}
	if strings.Join(names, " ") != "maglev-lru maglev" {
		t.Errorf("rows %v, want maglev-lru and maglev at %v flows", names, o.MaglevFlows)
	}
}

// TestCompareLoadsBaseline runs the compare modes with this build's own
// objects as the baselines: every mux row then has a baseline figure whose
// path was verified on the shared maps, and every row of the agent's own
// benchmark program a per-packet one.
func TestCompareLoadsBaseline(t *testing.T) {
	netlabtest.RequireRoot(t)
	o := Quick
	o.Baseline, o.BaselineName = MuxBenchObject(), "self"
	o.AgentBaseline, o.AgentBaselineName = AgentBenchObject(), "self"
	rep, err := Run(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rep, true)
}

// perPacketOnly are the rows without an undo, measured per packet only.
func perPacketOnly(name string) bool {
	return name == "encap-floor-plain" || name == "encap-floor-random" || name == "beamer-floor" || name == "beamer-floor-counted" || name == "beamer-floor-moved4" || strings.HasPrefix(name, "strip-floor")
}

func checkRows(t *testing.T, rep *Report, compare bool) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range quickRows {
		want[n] = false
	}
	seen := map[string]bool{}
	for _, p := range rep.Programs {
		if key := fmt.Sprintf("%s/%d/%d", p.Name, p.Flows, p.Buckets); seen[key] {
			t.Errorf("%s at %d flows and %d buckets measured twice", p.Name, p.Flows, p.Buckets)
		} else {
			seen[key] = true
		}
		want[p.Name] = true
		if perPacketOnly(p.Name) {
			// No undo: per packet only.
			if p.NsPerPacket != 0 || p.PerPacket == nil || p.PerPacket.NsMedian <= 0 {
				t.Errorf("%s: want a per-packet figure only, got batched %v, per packet %+v", p.Name, p.NsPerPacket, p.PerPacket)
			}
			continue
		}
		if p.NsPerPacket <= 0 || p.NsMin > p.NsPerPacket || p.NsMax < p.NsPerPacket {
			t.Errorf("%s: %v ns/packet (min %v, max %v)", p.Name, p.NsPerPacket, p.NsMin, p.NsMax)
		}
		// Floors, empty programs and the lines-K probes decide nothing:
		// no path to verify, and the compare mode has no baseline of them.
		floor := strings.Contains(p.Name, "empty") || strings.Contains(p.Name, "floor") || strings.HasPrefix(p.Name, "lines-")
		if p.Name == "rotation" {
			if p.PerPacket != nil || p.Baseline != nil {
				t.Errorf("rotation: batched only, has %+v / %+v", p.PerPacket, p.Baseline)
			}
			continue
		}
		if !floor && !p.PathVerified {
			t.Errorf("%s (%d flows): path not verified", p.Name, p.Flows)
		}
		if p.PerPacket == nil || p.PerPacket.NsMedian <= 0 {
			t.Errorf("%s: no per-packet figure", p.Name)
		} else if !floor && !p.PerPacket.PathVerified {
			t.Errorf("%s: per-packet path not verified", p.Name)
		}
		mux := !strings.HasPrefix(p.Name, "agent") && p.Name != "empty-tc" && !floor
		if compare && (mux || p.Name == "empty") {
			if p.Baseline == nil {
				t.Errorf("%s: no baseline figure", p.Name)
			} else if mux && !p.Baseline.PathVerified {
				t.Errorf("%s: baseline path not verified", p.Name)
			}
			// The baseline's production program per packet, beside this
			// build's (the IPv6 rows reach it by a tail call the baseline
			// cannot share: batched only).
			if mux && !strings.Contains(p.Name, "ipv6") {
				if b := p.BaselinePerPacket; b == nil || b.NsMedian <= 0 || !b.PathVerified {
					t.Errorf("%s: no verified per-packet baseline figure: %+v", p.Name, b)
				}
			}
		}
		agentCompared := p.Name == "agent-local" || p.Name == "agent-chain" || p.Name == "agent-drop" || p.Name == "agent-xdp-local" || p.Name == "agent-xdp-pass"
		if compare && agentCompared {
			if p.BaselinePerPacket == nil || p.Baseline == nil {
				t.Errorf("%s: no agent baseline figures", p.Name)
			} else if !p.BaselinePerPacket.PathVerified {
				t.Errorf("%s: agent baseline path not verified", p.Name)
			}
		}
		if !compare && (p.Baseline != nil || p.BaselinePerPacket != nil) {
			t.Errorf("%s: baseline figure without a baseline", p.Name)
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("no %s row", name)
		}
	}
}
