package lab

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPlotsRender draws every plot of a recorded demo run (beamer, maglev
// and prism; testdata/plot-results.json) and of the same run with nothing
// broken: the files exist, the experiment has its overlay of strategies,
// and the broken-connections chart of a run with nothing broken has an
// axis from 0 (its bars carry "0 broken" labels). (How they look was checked
// by eye; BEAMER_PLOTS_DIR=DIR go test -run TestPlotsRender ./research/lab keeps
// them.)
func TestPlotsRender(t *testing.T) {
	b, err := os.ReadFile("testdata/plot-results.json")
	if err != nil {
		t.Fatal(err)
	}
	var results []*Result
	if err := json.Unmarshal(b, &results); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("BEAMER_PLOTS_DIR"); d != "" {
		dir = d
	}
	files, err := WritePlots(dir, results)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"demo-compare.png", "broken.png", "demo-beamer-total.png", "demo-maglev-servers.png"} {
		p := filepath.Join(dir, want)
		if !slices.Contains(files, p) {
			t.Errorf("%s not written (have %v)", want, files)
		} else if st, err := os.Stat(p); err != nil || st.Size() < 5000 {
			t.Errorf("%s: %v, %d bytes", want, err, st.Size())
		}
	}
	for _, r := range results {
		r.Broken, r.BrokenPct = 0, 0
	}
	p, err := brokenPlot(results)
	if err != nil {
		t.Fatal(err)
	}
	// Before: an axis from -1 to 1 with nothing on it.
	if p.Y.Min != 0 || p.Y.Max != 1 {
		t.Errorf("nothing broken: y axis %v–%v, want 0–1 with the counts above the bars", p.Y.Min, p.Y.Max)
	}
	if err := savePlot(p, filepath.Join(dir, "broken-none.png")); err != nil {
		t.Fatal(err)
	}
}
