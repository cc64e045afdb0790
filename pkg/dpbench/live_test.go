package dpbench

import (
	"os"
	"testing"

	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
)

// TestLiveQuick is CI's smoke of the live benchmark: packets really cross a
// mux attached to a veth, and both strategies forward them. No rate is
// asserted.
func TestLiveQuick(t *testing.T) {
	netlabtest.RequireRoot(t)
	rows, err := RunLive(LiveQuick, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%+v", r)
		if r.Forwarded != uint64(r.Sent) || r.ProgramNs <= 0 {
			t.Errorf("%+v: not every packet forwarded, or no program statistics", r)
		}
	}
}
