package cheetah

import (
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
)

// TestRecordLayoutFromSpec: struct cheetah_mux_inst's layout is read from
// the compiled mux: two 16-byte keys, then policy, count and the picks.
func TestRecordLayoutFromSpec(t *testing.T) {
	spec, err := dataplane.MuxSpec()
	if err != nil {
		t.Fatal(err)
	}
	l, err := layoutOf(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", l)
	if l.keys != 0 || l.policy != 2*l.keySize || !(l.policy < l.n && l.n < l.picks) || l.picks+2*l.maxPicks > l.size || l.maxPicks < 2 {
		t.Errorf("cheetah record layout %+v", l)
	}
}
