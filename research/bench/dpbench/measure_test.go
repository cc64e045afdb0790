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

// TestDeltaMeasuresInterruptedAgain: a step during which a test run was
// stopped by a signal and run again (its counter moved by more than its
// runs) is measured again, and verified when the next attempt is clean;
// one interrupted every time stays unverified.
func TestDeltaMeasuresInterruptedAgain(t *testing.T) {
	var count uint64
	tr := trial{counter: "fwd", read: func() (map[string]uint64, error) { return map[string]uint64{"fwd": count}, nil }}
	calls := 0
	ok, err := tr.delta(100, func() error {
		calls++
		count += 100
		if calls == 1 { // stopped part way at 37 runs, then run whole
			count += 37
			interrupted.Add(1)
		}
		return nil
	})
	if err != nil || !ok || calls != 2 {
		t.Fatalf("interrupted once: verified %v after %d attempts (err %v), want verified after 2", ok, calls, err)
	}
	calls = 0
	ok, err = tr.delta(100, func() error {
		calls++
		count += 137
		interrupted.Add(1)
		return nil
	})
	if err != nil || ok || calls != maxInterruptedAttempts {
		t.Fatalf("interrupted always: verified %v after %d attempts (err %v), want unverified after %d", ok, calls, err, maxInterruptedAttempts)
	}
}
