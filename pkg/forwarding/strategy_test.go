package forwarding

import (
	"net/netip"
	"strings"
	"testing"
)

// The registry refuses what a configuration must not carry: a reserved
// strategy this build lacks, a name nobody reserved, and options of another
// strategy than the instance's.
func TestStrategyRegistry(t *testing.T) {
	base := Instance{Name: "x", Strategy: StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.0.1")},
		PortLow: 80, PortHigh: 80, Buckets: 101}
	if err := base.Validate(); err != nil {
		t.Fatalf("beamer: %v", err)
	}
	for _, s := range Strategies() {
		if s.Code() == 0 {
			t.Errorf("registered %q has no code", s)
		}
	}
	if StrategyBeamer.Code() != 1 || StrategyMaglev.Code() != 2 {
		t.Errorf("codes moved: beamer %d maglev %d, the mux program's enum strategy says 1 and 2", StrategyBeamer.Code(), StrategyMaglev.Code())
	}
	unknown := base
	unknown.Strategy = "round-robin"
	if err := unknown.Validate(); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("unknown strategy: %v", err)
	}
	for _, s := range []Strategy{StrategyPrism, StrategyCheetah, StrategyAWFD} {
		if s.Known() {
			continue
		}
		in := base
		in.Strategy = s
		if err := in.Validate(); err == nil || !strings.Contains(err.Error(), "not built into this binary") {
			t.Errorf("reserved %q: %v", s, err)
		}
	}
	other := base
	other.Cheetah = &CheetahOptions{}
	if err := other.Validate(); err == nil || !strings.Contains(err.Error(), "options for strategy") {
		t.Errorf("cheetah options on a beamer instance: %v", err)
	}
}
