package controller

import (
	"log/slog"
	"sync"
	"time"
)

// The controller's wall clock dates new incarnations and bucket change
// times, and ages chaining histories. A step of the host's clock (an
// operator's `date -s`, an NTP step, a VM resumed) would move all three
// at once: stepped forward by hours, every history expires at the next
// publication (connections still on a bucket's previous owners break)
// and change times run ahead of the agents' clocks; stepped back, new
// moves are dated hours in the past, so agents find their chaining window
// already closed and do not chain (issue 26, the clock fault). So the
// controller keeps time by a monotonic clock once it has read the wall
// clock: it follows the wall clock while the two agree (NTP slews both),
// and when the wall clock jumps it keeps counting from before the jump,
// says so, and never goes back. The clock is read first when the
// controller process starts (Run): a controller whose clock was wrong
// then stays as wrong until it restarts (the incarnation rules bound
// what that can do); a step that corrects it takes effect then.

// stepTolerance is how far the wall clock may move from the monotonic
// clock before it counts as a step. Linux's monotonic clock is slewed
// with the wall clock (adjtimex adjusts both), so only steps part them.
const stepTolerance = 2 * time.Second

// steplessClock is a wall clock that ignores the steps of wall: it
// advances by elapsed, a monotonic clock.
type steplessClock struct {
	wall    func() time.Time
	elapsed func() time.Duration
	log     *slog.Logger

	mu       sync.Mutex
	started  bool
	anchor   time.Time     // the last wall reading that agreed with elapsed
	anchorAt time.Duration // elapsed then
	last     time.Time     // the last time returned
	stepped  time.Duration // the step last reported (wall − kept time)
}

// newSteplessClock returns the clock's reading function.
func newSteplessClock(wall func() time.Time, elapsed func() time.Duration, log *slog.Logger) func() time.Time {
	c := &steplessClock{wall: wall, elapsed: elapsed, log: log}
	c.now() // read now: a step from here on is a step
	return c.now
}

// clock is the controller's clock as o asks: the host's wall clock, its
// steps ignored, when Now is not set; Now with its steps ignored when
// Elapsed is set; else Now as it is (tests that move time on purpose).
func (o Options) clock() func() time.Time {
	switch {
	case o.Now == nil:
		start := time.Now()
		return newSteplessClock(time.Now, func() time.Duration { return time.Since(start) }, loggerOr(o.Logger))
	case o.Elapsed != nil:
		return newSteplessClock(o.Now, o.Elapsed, loggerOr(o.Logger))
	}
	return o.Now
}

func (c *steplessClock) now() time.Time {
	w, e := c.wall().Round(0), c.elapsed()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.started, c.anchor, c.anchorAt, c.last = true, w, e, w
		return w
	}
	kept := c.anchor.Add(e - c.anchorAt)
	off := w.Sub(kept)
	if off.Abs() <= stepTolerance {
		c.anchor, c.anchorAt = w, e // agreeing: follow the wall clock's slewing
		if c.stepped != 0 {
			c.log.Info("the wall clock agrees with the controller's again", "wall", w.UTC().Format(time.RFC3339Nano))
			c.stepped = 0
		}
	} else {
		if (off - c.stepped).Abs() > stepTolerance {
			c.log.Warn("the wall clock stepped: the controller keeps counting from before the step (bucket change times, chaining windows and incarnations follow its clock; restart it to adopt the new time)",
				"step", off.Round(time.Millisecond).String(), "wall", w.UTC().Format(time.RFC3339Nano), "kept", kept.UTC().Format(time.RFC3339Nano))
			c.stepped = off
		}
		w = kept
	}
	if w.Before(c.last) {
		w = c.last // within the tolerance, never back
	}
	c.last = w
	return w
}
