package classes

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"testing"
	"time"
)

// Missed polls: the last value holds for Hold, then halves every HalfLife;
// a fresh answer replaces it at once; an unknown server has none.
func TestTrackerMissedPolls(t *testing.T) {
	tr := NewTracker(750*time.Millisecond, 250*time.Millisecond)
	t0 := time.Unix(1000, 0)
	tr.Report(1025, 80, t0)
	at := func(d time.Duration) float64 {
		a, _, ok := tr.Available(1025, t0.Add(d))
		if !ok {
			t.Fatal("server forgotten")
		}
		return a
	}
	if at(0) != 80 || at(750*time.Millisecond) != 80 {
		t.Fatalf("value not kept through the hold: %v %v", at(0), at(750*time.Millisecond))
	}
	if a := at(time.Second); a < 39.9 || a > 40.1 {
		t.Fatalf("one half-life after the hold: %v, want 40", a)
	}
	if a := at(3 * time.Second); a < 0.156 || a > 0.157 {
		t.Fatalf("9 half-lives after the hold: %v, want 80/512", a)
	}
	// The decayed value quantises to the idle class next to a fresh peer.
	tr.Report(1026, 80, t0.Add(3*time.Second))
	a1, _, _ := tr.Available(1025, t0.Add(3*time.Second))
	a2, _, _ := tr.Available(1026, t0.Add(3*time.Second))
	if w := Weights([]float64{a1, a2}, 4); w[0] != 0 || w[1] != 4 {
		t.Fatalf("weights %v, want [0 4]", w)
	}
	tr.Report(1025, 20, t0.Add(3*time.Second))
	if a := at(3 * time.Second); a != 20 {
		t.Fatalf("fresh answer: %v", a)
	}
	if _, _, ok := tr.Available(2000, t0); ok {
		t.Fatal("unknown server has a value")
	}
	tr.Forget(func(id forwarding.ServerID) bool { return id == 1026 })
	if _, _, ok := tr.Available(1025, t0); ok {
		t.Fatal("forgotten server still known")
	}
}
