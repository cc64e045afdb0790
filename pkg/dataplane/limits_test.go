package dataplane

import (
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestLimitsFromSpec: the sizes Go uses come from the compiled mux (limits.go),
// and the limits other packages validate against before anything reaches a
// mux are the same numbers as bpf/include/limits.h's.
func TestLimitsFromSpec(t *testing.T) {
	s, err := muxLimits()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", s)
	for name, v := range map[string]int{"vips": s.vips, "portSets": s.portSets, "tables": s.tables,
		"serverTable": s.serverTable, "vipRecords": s.vipRecords, "serverStats": s.serverStats,
	} {
		if v <= 0 {
			t.Errorf("%s = %d", name, v)
		}
	}
	if s.chain != forwarding.MaxChain {
		t.Errorf("BEAMER_MAX_CHAIN is %d, forwarding.MaxChain %d", s.chain, forwarding.MaxChain)
	}
	if s.portSetRanges != forwarding.MaxVIPRanges {
		t.Errorf("PORT_SET_RANGES is %d, forwarding.MaxVIPRanges %d", s.portSetRanges, forwarding.MaxVIPRanges)
	}
	if s.vipRecords < s.vips {
		t.Errorf("%d VIP records for %d VIPs", s.vipRecords, s.vips)
	}
}
