package dpbench

import (
	"io"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
)

// quickRows are the rows every run has.
var quickRows = []string{"empty", "floor", "encap-floor", "rotation", "beamer", "beamer-mptcp", "maglev", "maglev-lru", "prism-empty", "prism-miss", "prism-hit",
	"empty-tc", "decap-floor", "agent-local", "agent-local-moved", "agent-chain", "agent-drop",
	"cheetah-cookie", "cheetah-cookie-general", "cheetah-syn-rr", "cheetah-fallback",
	"agent-cheetah-egress", "agent-cheetah-ingress", "decap-floor-xdp", "agent-xdp-local", "agent-xdp-pass",
	"udp", "udp-moved1", "quic-cid", "quic-initial",
	"beamer-gue", "beamer-gue-moved1", "agent-local-gue", "agent-chain-gue", "agent-xdp-local-gue",
	"beamer-ipv6", "beamer-ipv6-moved1", "agent6-local", "agent6-local-moved", "agent6-chain", "agent-xdp-local-ipv6"}

// TestQuickRun is CI's smoke of `beamer bench dataplane`: every program runs
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
}

// TestCompareLoadsBaseline runs the compare mode with this build's own
// object as the baseline: every mux row then has a baseline figure whose
// path was verified on the shared maps.
func TestCompareLoadsBaseline(t *testing.T) {
	netlabtest.RequireRoot(t)
	o := Quick
	o.Baseline, o.BaselineName = dataplane.MuxBenchObject(), "self"
	rep, err := Run(o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, rep, true)
}

func checkRows(t *testing.T, rep *Report, compare bool) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range quickRows {
		want[n] = false
	}
	for _, p := range rep.Programs {
		want[p.Name] = true
		if p.NsPerPacket <= 0 || p.NsMin > p.NsPerPacket || p.NsMax < p.NsPerPacket {
			t.Errorf("%s: %v ns/packet (min %v, max %v)", p.Name, p.NsPerPacket, p.NsMin, p.NsMax)
		}
		floor := strings.Contains(p.Name, "empty") || strings.Contains(p.Name, "floor")
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
		}
		if !compare && p.Baseline != nil {
			t.Errorf("%s: baseline figure without a baseline", p.Name)
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("no %s row", name)
		}
	}
}
