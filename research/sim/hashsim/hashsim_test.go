package hashsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestPaperFigures runs every table and figure at the papers' sizes (fewer
// repetitions) and checks our figures against the tolerances stated in
// docs/hashing.md. Each bound is one a wrong implementation would break.
func TestPaperFigures(t *testing.T) {
	c := Default()
	c.Reps, c.BalanceReps, c.BuildTimeRuns = 3, 2, 1
	c.ResilienceFailures = []float64{1, 5}
	c.Scale, c.ScaleDIPs, c.ScaleChanges = true, 2000, []int{1, 100, 1000}
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	within := func(what string, v, lo, hi float64) {
		t.Helper()
		if v < lo || v > hi {
			t.Errorf("%s = %v, want %v–%v", what, v, lo, hi)
		}
	}
	if len(r.Table1) != 8 {
		t.Fatalf("table 1 has %d rows", len(r.Table1))
	}
	for _, x := range r.Table1 {
		name := x.Algorithm + " " + string(rune('0'+x.ChurnPct))
		switch x.Algorithm {
		case "stable":
			within(name+" imbalance", x.Imbalance, 1, 1.01)
			within(name+" rules", float64(x.RangeRules), 1000, 1000)
			within(name+" innocent%", x.InnocentDisruptionPct, 0, 0)
			within(name+" changed% (only the removed servers' share)", x.ChangedEntriesPct, float64(x.ChurnPct)-0.2, float64(x.ChurnPct)+0.2)
		case "maglev":
			within(name+" imbalance", x.Imbalance, 1, 1.01)
			within(name+" rules", float64(x.RangeRules), 0.99*65537, 65537)
			within(name+" innocent%", x.InnocentDisruptionPct, *x.Paper.InnocentDisruptionPct-0.5, *x.Paper.InnocentDisruptionPct+0.5)
		case "consistent":
			within(name+" imbalance", x.Imbalance, 1.8, 3)
			within(name+" rules", float64(x.RangeRules), 2000, 20000)
			within(name+" innocent%", x.InnocentDisruptionPct, 0, 0)
		case "rendezvous":
			within(name+" imbalance", x.Imbalance, 1.25, 1.7)
			within(name+" innocent%", x.InnocentDisruptionPct, 0, 0)
		}
	}
	for _, x := range r.MaglevBalance {
		name := x.Algorithm + " balance"
		switch {
		case x.Algorithm == "maglev" || x.Algorithm == "stable":
			within(name, x.OverprovisionPct, 0, 1)
		case x.TableSize == 65537:
			within(name+" 65537", x.OverprovisionPct, 25, 60)
		default:
			within(name+" 655373", x.OverprovisionPct, 8, 18)
		}
	}
	for _, x := range r.MaglevResilience {
		within("maglev changed% above the minimum", x.ChangedPct-x.MinimumPct, 0.2, 5)
		within("maglev minimum%", x.MinimumPct, x.FailurePct-0.2, x.FailurePct+0.2)
	}
	for _, x := range r.BuildTimeMs {
		if x.Ms <= 0 || x.Runs < 1 {
			t.Errorf("build time %+v", x)
		}
	}
	for _, x := range r.Fragmentation {
		switch x.Operation {
		case "fresh", "double":
			within(x.Operation+" rules/DIP", x.RulesPerDIP, 1, 1)
		case "halve (every other DIP)":
			within(x.Operation+" rules/DIP", x.RulesPerDIP, 1, 1.001)
		case "add 1", "remove 1 (random)":
			within(x.Operation+" rules/DIP", x.RulesPerDIP, 1, 1.02)
		default:
			within(x.Operation+" rules/DIP", x.RulesPerDIP, 1, 2)
		}
	}
	first, last := r.DefragRun[0], r.DefragRun[len(r.DefragRun)-1]
	within("defrag start rules/DIP", first.RulesPerDIP, 100, 100)
	within("defrag end rules/DIP", last.RulesPerDIP, 1, c.Defrag.TargetRate)
	within("defrag iterations", float64(last.Iteration), 10, 25)
	within("defrag moved", float64(last.CumulativeMoved), float64(first.MisplacedBuckets), float64(first.MisplacedBuckets))
	if len(r.Scale) != 8 {
		t.Fatalf("scale has %d rows", len(r.Scale))
	}
	for _, x := range r.Scale[:6] {
		k := float64(x.DIPsAfter - x.DIPsBefore)
		if k < 0 {
			k = -k
		}
		// Each added or removed DIP accounts for its ~100 buckets.
		within(x.Operation+" changes", float64(x.Changes), k*90, k*101)
		within(x.Operation+" delta bytes", float64(x.DeltaBytes), 12*float64(x.Changes), 12*float64(x.Changes))
	}

	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Table 1", "Maglev §5.3 balance", "resilience", "build time", "Fragmentation", "Defragmentation run", "scale"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text output lacks %q", s)
		}
	}
	checkJSONContract(t, r)
}

// checkJSONContract checks the keys scripts read.
func checkJSONContract(t *testing.T, r *Report) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string][]map[string]any
	var raw map[string]json.RawMessage
	json.Unmarshal(b, &raw)
	m = map[string][]map[string]any{}
	for k, v := range raw {
		var rows []map[string]any
		if json.Unmarshal(v, &rows) == nil {
			m[k] = rows
		}
	}
	want := map[string][]string{
		"table1":         {"algorithm", "servers", "buckets", "churn_pct", "imbalance", "range_rules", "innocent_disruption_pct", "paper"},
		"maglev_balance": {"algorithm", "table_size", "overprovision_pct", "paper_overprovision_pct"},
		"build_time_ms":  {"algorithm", "table_size", "backends", "ms"},
		"fragmentation":  {"operation", "dips", "buckets", "rules_per_dip"},
		"defrag_run":     {"iteration", "rules_per_dip", "moved_buckets"},
	}
	for key, fields := range want {
		if len(m[key]) == 0 {
			t.Errorf("JSON has no %q rows", key)
			continue
		}
		for _, f := range fields {
			if _, ok := m[key][0][f]; !ok {
				t.Errorf("JSON %s rows lack %q", key, f)
			}
		}
	}
}

func TestConfigErrors(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.Reps = 0 },
		func(c *Config) { c.Table1Servers = 1 },
		func(c *Config) { c.Table1Churn = []int{100} },
		func(c *Config) { c.BalanceSizes = []uint32{10} },
		func(c *Config) { c.FragDIPs = 40000 },
		func(c *Config) { c.Defrag.MaxMoves = 0 },
		func(c *Config) { c.Scale, c.ScaleChanges = true, []int{64000} },
	} {
		c := Default()
		mod(&c)
		if _, err := Run(c); err == nil || !errors.Is(err, ErrConfig) && !strings.Contains(err.Error(), "defrag") {
			t.Errorf("bad config accepted or wrong error: %v", err)
		}
	}
}
