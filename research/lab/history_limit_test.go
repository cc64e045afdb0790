package lab

import (
	"fmt"
	"strings"
	"testing"
)

// TestScenarioHistoryLimit (issue 28, the K limit): the history-limit
// scenario moves some of server 0's buckets five times while server 0
// still holds connections there (K = 4). With --history-evict-oldest, the
// rule before issue 28, the fifth move pushes server 0 out of those
// histories: its connections there break, and the controller says so with
// the right count — the metric, the ctl show warning and its record name
// exactly the connections the clients' own ledger has in the evicted
// buckets. With the default rule, the same scenario pushes out owners the
// agents reported idle instead and breaks nothing.
func TestScenarioHistoryLimit(t *testing.T) {
	requireLab(t)
	first := ServerID(0)
	for _, evictOldest := range []bool{true, false} {
		name := map[bool]string{true: "evict-oldest", false: "keep-holders"}[evictOldest]
		t.Run(name, func(t *testing.T) {
			sc, err := LoadScenario("history-limit")
			if err != nil {
				t.Fatal(err)
			}
			sc.EvictOldest = evictOldest
			r, err := runScenarioOf(t, sc, "beamer")
			if err != nil {
				t.Fatal(err)
			}
			summary(t, r)
			h := r.Heirs
			if h == nil || len(h.Removed) != 4 || h.Moves[3] != 4 {
				t.Fatalf("the scenario did not move a followed bucket a fifth time: %+v", h)
			}
			t.Logf("%s: %d of %d broken (by server %v); server 0's connections per bucket %v; heirs %v; controller: evicted %v, cuts %v",
				name, r.Broken, r.Connections, r.BrokenByServer, h.Buckets, h.Removed, h.Evicted, h.Cuts)
			if r.Final == nil {
				t.Fatal("no final ctl show")
			}
			var warnings []string
			for _, w := range r.Final.Warnings {
				if strings.Contains(w, "HISTORY LIMIT") {
					warnings = append(warnings, w)
				}
			}
			if !evictOldest {
				if r.Broken != 0 {
					t.Errorf("keep-holders: %d of %d connections broken (%v, by server %v), want 0", r.Broken, r.Connections, r.BrokenReasons, r.BrokenByServer)
				}
				if h.Cuts["idle"] == 0 || h.Cuts["holder"] != 0 || len(warnings) > 0 || r.Final.HistoryEvictions != nil {
					t.Errorf("keep-holders: want idle owners cut and no holder, got cuts %v, warnings %q", h.Cuts, warnings)
				}
				return
			}
			evicted := r.Final.EvictedBuckets(first)
			want := 0
			for _, b := range evicted {
				want += h.Buckets[b]
			}
			if want == 0 {
				t.Fatalf("evict-oldest: the controller's record %+v names no bucket of server 0's connections %v", r.Final.HistoryEvictions, h.Buckets)
			}
			var recorded uint64
			for _, ev := range r.Final.HistoryEvictions.Recent {
				if ev.Server == first {
					recorded += ev.Connections
				}
			}
			if recorded != uint64(want) || h.Evicted[fmt.Sprint(first)] != uint64(want) {
				t.Errorf("evict-oldest: %d connections of server 0 in the evicted buckets %v; the record says %d, the metric %v",
					want, evicted, recorded, h.Evicted)
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], fmt.Sprintf("server %d", first)) ||
				!strings.Contains(warnings[0], fmt.Sprintf("held %d connections", want)) {
				t.Errorf("evict-oldest: want one ctl show warning for server %d with %d connections, got %q", first, want, warnings)
			}
			if r.BrokenByServer["srv0"] == 0 {
				t.Errorf("evict-oldest: none of server 0's connections broke, yet %d were pushed out of their histories", want)
			}
		})
	}
}
