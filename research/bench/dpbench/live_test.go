package dpbench

import (
	"os"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestLiveQuick is CI's smoke of the live benchmark: packets really cross a
// mux attached to a veth, each strategy forwards them, the mux's NAPI
// thread did the work on its own CPU, and every packet is accounted for:
// sent = taken by the generator's veth + refused at the mux's full ring,
// forwarded = delivered to the sink + refused at the sink's full ring. No
// rate is asserted.
func TestLiveQuick(t *testing.T) {
	netlabtest.RequireRoot(t)
	rows, err := RunLive(LiveQuick, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		t.Logf("%+v", r)
		if r.Forwarded == 0 || r.ProgramNs <= 0 || r.MuxNs <= 0 || r.GenNs <= 0 {
			t.Errorf("%s: nothing forwarded, or no program or thread statistics", r.Strategy)
		}
		if uint64(r.Sent) != r.GenXmit+r.DropsToMux {
			t.Errorf("%s: sent %d, but the generator's veth took %d and refused %d", r.Strategy, r.Sent, r.GenXmit, r.DropsToMux)
		}
		if r.Forwarded > r.GenXmit {
			t.Errorf("%s: forwarded %d of %d received", r.Strategy, r.Forwarded, r.GenXmit)
		}
		if r.Forwarded != r.Delivered+r.DropsToSink {
			t.Errorf("%s: forwarded %d, but the sink got %d and %d were refused", r.Strategy, r.Forwarded, r.Delivered, r.DropsToSink)
		}
	}
}
