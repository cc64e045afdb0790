package dpbench

import "testing"

// TestUninterruptedMean: a run ten times the median is left out, the
// program's own spread is not.
func TestUninterruptedMean(t *testing.T) {
	runs := []float64{100, 110, 120, 300, 900, 100, 100, 255000}
	if got, want := uninterruptedMean(runs), (100+110+120+300+900+100+100)/7.0; got != want {
		t.Fatalf("uninterruptedMean = %v, want %v (the 255 µs run left out)", got, want)
	}
	if got := uninterruptedMean(nil); got != 0 {
		t.Fatalf("no runs: %v", got)
	}
}

// TestComparedTrials: the compare mode runs an even number of trials, so
// each build goes first in half of them; other runs keep the count asked.
func TestComparedTrials(t *testing.T) {
	for _, c := range []struct {
		trials  int
		compare bool
		want    int
	}{{7, true, 8}, {8, true, 8}, {1, true, 1}, {7, false, 7}, {21, true, 22}} {
		if got := comparedTrials(c.trials, c.compare); got != c.want {
			t.Errorf("comparedTrials(%d, %v) = %d, want %d", c.trials, c.compare, got, c.want)
		}
	}
}
