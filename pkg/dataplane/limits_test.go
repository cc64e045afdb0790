package dataplane

import (
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
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
		"cheetahPicks": s.cheetahPicks, "awfd.size": s.awfd.size} {
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
	if s.awfd.maxServers != classes.MaxServers {
		t.Errorf("AWFD_MAX_SERVERS is %d, classes.MaxServers %d", s.awfd.maxServers, classes.MaxServers)
	}
	if s.vipRecords < s.vips {
		t.Errorf("%d VIP records for %d VIPs", s.vipRecords, s.vips)
	}
	a := s.awfd
	if !(a.upper < a.start && a.start < a.count && a.count < a.servers && a.servers+2*a.maxServers <= a.size) {
		t.Errorf("awfd record layout %+v", a)
	}
}
