package controller

import (
	"testing"
	"time"
)

func TestHealthThresholdsAndDamping(t *testing.T) {
	o := HealthOptions{}
	o.fill()
	h := &health{}
	now := time.Unix(1_700_000_000, 0)
	down := false
	step := func(ok bool) {
		now = now.Add(o.Interval)
		down = !h.verdict(ok, down, now, &o)
	}
	step(false)
	step(false)
	if down {
		t.Fatal("down after 2 failures with Fall 3")
	}
	step(false)
	if !down {
		t.Fatal("not down after 3 failures")
	}
	step(true)
	if !down {
		t.Fatal("up after 1 success with Rise 2")
	}
	step(true)
	if down {
		t.Fatal("not up after 2 successes")
	}
	// Flap twice more: the third down transition suppresses the DIP.
	for range 2 {
		for range 3 {
			step(false)
		}
		for range 2 {
			step(true)
		}
	}
	if !down {
		t.Fatal("a DIP flapping 3 times in a minute is back up; want it suppressed")
	}
	for range 10 {
		step(true)
	}
	if !down {
		t.Fatal("suppression ended before the penalty decayed")
	}
	now = now.Add(2 * o.HalfLife) // penalty ~3 → ~0.75 < Reuse
	step(true)
	if down {
		t.Fatal("still down after the penalty decayed below Reuse")
	}
}
