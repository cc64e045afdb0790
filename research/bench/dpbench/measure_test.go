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
