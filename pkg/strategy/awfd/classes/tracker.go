package classes

import (
	"math"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Tracker is the controller's view of every server's available capacity
// across polls. A poll that fails keeps the server's last value for Hold
// (a lost answer or a slow agent says nothing about the server's load);
// after that the value halves every HalfLife, so a server whose agent
// stays silent drifts into the idle class instead of receiving new
// connections on a guess forever. A server never heard from has no value
// (weight 0) until its first answer. Health checks, not the tracker,
// decide whether a server is up.
type Tracker struct {
	Hold     time.Duration
	HalfLife time.Duration
	last     map[forwarding.ServerID]sample
}

type sample struct {
	avail float64
	at    time.Time
}

// NewTracker keeps a value for hold after the last answer, then halves it
// every halfLife.
func NewTracker(hold, halfLife time.Duration) *Tracker {
	return &Tracker{Hold: hold, HalfLife: halfLife, last: map[forwarding.ServerID]sample{}}
}

// Report records id's available capacity answered at t.
func (t *Tracker) Report(id forwarding.ServerID, avail float64, at time.Time) {
	if !usable(avail) {
		avail = 0
	}
	t.last[id] = sample{avail: avail, at: at}
}

// Forget drops servers no longer in the pool.
func (t *Tracker) Forget(keep func(forwarding.ServerID) bool) {
	for id := range t.last {
		if !keep(id) {
			delete(t.last, id)
		}
	}
}

// Available is id's capacity as of now, and its age (0 with ok false when
// never heard from).
func (t *Tracker) Available(id forwarding.ServerID, now time.Time) (avail float64, age time.Duration, ok bool) {
	s, ok := t.last[id]
	if !ok {
		return 0, 0, false
	}
	age = now.Sub(s.at)
	if age <= t.Hold || t.HalfLife <= 0 {
		if age > t.Hold {
			return 0, age, true
		}
		return s.avail, age, true
	}
	return s.avail * math.Exp2(-float64(age-t.Hold)/float64(t.HalfLife)), age, true
}
