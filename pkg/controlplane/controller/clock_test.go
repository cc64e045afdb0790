package controller

import (
	"testing"
	"time"
)

// TestSteplessClock: the controller's clock follows the wall clock while
// it agrees with the monotonic one (a drift within the tolerance), keeps
// counting from before a step either way, and never goes back.
func TestSteplessClock(t *testing.T) {
	base := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	wall := base // read when the clock is made, at elapsed 0
	var elapsed time.Duration
	book, logger := newLogBook()
	now := newSteplessClock(func() time.Time { return wall }, func() time.Duration { return elapsed }, logger)
	at := func(e time.Duration, w time.Time) time.Time { elapsed, wall = e, w; return now() }

	if got := at(0, base); !got.Equal(base) {
		t.Fatalf("first reading %v, want %v", got, base)
	}
	if got := at(10*time.Second, base.Add(10*time.Second+500*time.Millisecond)); !got.Equal(base.Add(10*time.Second + 500*time.Millisecond)) {
		t.Errorf("a drift within the tolerance: %v, want the wall clock", got)
	}
	// Three hours forward: ignored, counted on from before.
	if got, want := at(20*time.Second, base.Add(3*time.Hour+20*time.Second)), base.Add(20*time.Second+500*time.Millisecond); !got.Equal(want) {
		t.Errorf("after a step forward: %v, want %v", got, want)
	}
	if len(book.find("the wall clock stepped")) != 1 {
		t.Errorf("the step was not logged once:\n%s", book.String())
	}
	// Six hours back (three behind real time): ignored too.
	if got, want := at(30*time.Second, base.Add(-3*time.Hour+30*time.Second)), base.Add(30*time.Second+500*time.Millisecond); !got.Equal(want) {
		t.Errorf("after a step back: %v, want %v", got, want)
	}
	// A second back within the tolerance: never back.
	prev := at(40*time.Second, base.Add(40*time.Second+500*time.Millisecond))
	if got := at(41*time.Second, base.Add(40*time.Second)); got.Before(prev) {
		t.Errorf("went back from %v to %v", prev, got)
	}
}
