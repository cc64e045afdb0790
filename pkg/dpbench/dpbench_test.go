package dpbench

import (
	"io"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
)

// TestQuickRun is CI's smoke of `beamer bench dataplane`: every program runs
// and took its intended path on every repetition. No timing is asserted.
func TestQuickRun(t *testing.T) {
	netlabtest.RequireRoot(t)
	rep, err := Run(Quick, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"empty": false, "floor": false, "encap-floor": false, "beamer": false, "beamer-mptcp": false, "maglev": false, "prism-miss": false, "prism-hit": false,
		"empty-tc": false, "decap-floor": false, "agent-local": false, "agent-local-moved": false, "agent-chain": false, "agent-drop": false}
	for _, p := range rep.Programs {
		want[p.Name] = true
		if p.NsPerPacket <= 0 {
			t.Errorf("%s: %v ns/packet", p.Name, p.NsPerPacket)
		}
		if !strings.Contains(p.Name, "empty") && !strings.Contains(p.Name, "floor") && !p.PathVerified {
			t.Errorf("%s (%d flows): path not verified", p.Name, p.Flows)
		}
	}
	for name, seen := range want {
		if !seen {
			t.Errorf("no %s row", name)
		}
	}
	if rep.Ratios.BeamerOverFloor <= 0 || rep.Ratios.AgentLocalOverEmptyTC <= 0 {
		t.Errorf("ratios: %+v", rep.Ratios)
	}
}
