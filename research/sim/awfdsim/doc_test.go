package awfdsim

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/sim/docblock"
)

var update = flag.Bool("update", false, "rewrite the document's generated blocks from docs/img/awfd-sim.json")

// The simulated figures of docs/strategy-awfd.md, and where each m falls
// below WCMP, are what the committed raw run (docs/img/awfd-sim.json,
// written by scripts/sim-doc.sh) says.
func TestDocFigures(t *testing.T) {
	raw, err := os.ReadFile("../../../docs/img/awfd-sim.json")
	if err != nil {
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Fig8) == 0 || len(r.Fig10.Points) == 0 {
		t.Fatal("docs/img/awfd-sim.json has no curves")
	}
	if err := docblock.Sync("../../../docs/strategy-awfd.md", r.DocBlocks(), *update); err != nil {
		t.Fatal(err)
	}
}

// The sentence is read from the numbers: a curve below WCMP at the last
// intervals is "from … on", one point is "at …", and the prefix where
// every curve is above WCMP is named.
func TestBelowWCMPSentence(t *testing.T) {
	pts := func(ys ...float64) []Point {
		var out []Point
		for i, y := range ys {
			out = append(out, Point{X: []float64{100, 500, 1000, 2000}[i], Omega: y})
		}
		return out
	}
	r := &Result{}
	for _, ms := range []int{100, 500, 1000, 2000} {
		r.Config.Intervals = append(r.Config.Intervals, msDuration(ms))
	}
	r.Fig8 = []Series{
		{Name: "ECMP", Points: pts(0.8, 0.8, 0.8, 0.8)},
		{Name: "WCMP", Points: pts(0.9, 0.9, 0.9, 0.9)},
		{Name: "AWFD m=2", Points: pts(0.95, 0.8996, 0.85, 0.7)}, // 0.8996 prints as 0.900: not below
		{Name: "AWFD m=4", Points: pts(0.97, 0.96, 0.93, 0.89)},
	}
	got := r.belowWCMP()
	for _, want := range []string{
		"AWFD m=2 is below WCMP (0.900) from 1 s on (0.850, 0.700), and is below ECMP (0.800) at 2 s (0.700)",
		"AWFD m=4 is below WCMP (0.900) at 2 s (0.890)",
		"Up to 500 ms every AWFD curve is at or above WCMP.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("sentence %q\nlacks %q", got, want)
		}
	}
}

func msDuration(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }
