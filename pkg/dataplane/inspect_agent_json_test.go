package dataplane

import (
	"encoding/json"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane/agentspi"
)

// TestAgentInspectionJSON: a strategy's fields stand beside the agent's
// own, in the order `beamer agent inspect -o json` always printed them
// (pin_dir, program, vips, the strategy's state, counters, the strategy's
// counters), and empty ones are left out.
func TestAgentInspectionJSON(t *testing.T) {
	in := AgentInspection{PinDir: "/p", Program: ProgramView{ID: 7, Name: "beamer_agent", Tag: "ab"},
		VIPs:     []AgentVIPInspect{{VIP: netip.MustParseAddr("198.18.100.1"), Buckets: 8, Window: "4m0s"}},
		Counters: Counters{"local_syn": 3},
		Strategies: []StrategyInspection{
			{Strategy: "cheetah", Inspection: agentspi.Inspection{Fields: map[string]any{"cheetah": []int{1}}},
				Counters: map[string]Counters{"cheetah_counters": {"egress_cookie": 2}}},
			{Strategy: "other", Counters: map[string]Counters{"other_counters": {}}},
		}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"pin_dir":"/p","program":{"id":7,"name":"beamer_agent","tag":"ab"},` +
		`"vips":[{"vip":"198.18.100.1","buckets":8,"chain_window":"4m0s","incarnation":0,"generation":0,"buckets_moved":0,"buckets_chaining":0}],` +
		`"cheetah":[1],"counters":{"local_syn":3},"cheetah_counters":{"egress_cookie":2}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	b, err = json.Marshal(&AgentInspection{PinDir: "/p"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"pin_dir":"/p","program":{"id":0,"name":"","tag":""},"vips":null,"counters":null}`; string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}
