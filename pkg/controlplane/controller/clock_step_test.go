package controller

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// steppedClock is a controller host's wall clock that the test steps, as
// `date -s` or an NTP step would; its monotonic clock goes on.
type steppedClock struct{ step atomic.Int64 } // nanoseconds

func (c *steppedClock) now() time.Time {
	return time.Now().Round(0).Add(time.Duration(c.step.Load()))
}

// checkChangeTimes: every bucket's change time is within slack of the
// real clock or before it (none hours ahead), and every bucket that
// moved since prev is dated now (not hours in the past, where an agent
// would find its chaining window closed and not chain); a bucket that did
// not move keeps its history (its window, real time, is still open).
func checkChangeTimes(t *testing.T, what string, prev, cur *forwarding.Table, from, to time.Time) {
	t.Helper()
	const slack = 5 // seconds: the stepless clock's tolerance and rounding
	lo, hi := uint32(from.Unix())-slack, uint32(to.Unix())+slack
	moved, bad := 0, 0
	for i := range cur.Buckets {
		b, p := cur.Buckets[i], prev.Buckets[i]
		if b.Current != p.Current {
			moved++
		}
		if b.Changed > hi {
			bad++
			if bad <= 2 {
				t.Errorf("%s: bucket %d changed at %d, %d s ahead of the real clock", what, i, b.Changed, b.Changed-hi+slack)
			}
			continue
		}
		if b.Current != p.Current {
			if b.Changed < lo {
				bad++
				if bad <= 3 {
					t.Errorf("%s: bucket %d moved (%d → %d) but is dated %d s in the past: agents would not chain it", what, i, p.Current, b.Current, lo+slack-b.Changed)
				}
			}
			continue
		}
		if b.History != p.History {
			bad++
			if bad <= 3 {
				t.Errorf("%s: bucket %d did not move, yet its history went from %v to %v within its chaining window", what, i, p.History, b.History)
			}
		}
	}
	if moved == 0 {
		t.Fatalf("%s: no bucket moved: the check proves nothing", what)
	}
	if bad > 3 {
		t.Errorf("%s: %d buckets wrong in all", what, bad)
	}
}

// TestClockStepLeader (issue 26, the clock fault): three controllers on
// a 3-member embedded etcd cluster; the elected controller's wall clock
// steps forward three hours, then back six, while servers are added
// (buckets move); then the standbys' clocks step, one forward and one
// back, and the leader is killed. Throughout, pairs only go forward (the
// mux model fails on a step back or a fork), bucket change times are
// never hours ahead of or behind real time, histories of buckets that did
// not move stay within their window, and the new leader publishes under
// an incarnation above every one before. A single kernel cannot step one
// member's clock (time namespaces do not virtualise CLOCK_REALTIME), so
// the partition rig cannot inject this fault; the controllers' Now is
// stepped here instead, their monotonic clock (Elapsed) going on.
func TestClockStepLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-member etcd cluster and three controllers")
	}
	r := etcdCluster(t)
	start := time.Now()
	elapsed := func() time.Duration { return time.Since(start) }
	clocks := []*steppedClock{{}, {}, {}}
	cr := newClusterRigWith(t, r, func(i int) Options { return Options{Now: clocks[i].now, Elapsed: elapsed} })
	leader := cr.leader("", nil)
	cr.populate()
	prev := cr.converged("before any step")
	next := forwarding.ServerID(1028)
	for _, step := range []time.Duration{3 * time.Hour, -3 * time.Hour} {
		what := fmt.Sprintf("leader's clock stepped to %+v", step)
		clocks[leader.member].step.Store(int64(step))
		from := time.Now()
		cr.addDIP(next)
		next++
		cur := cr.converged(what)
		checkChangeTimes(t, what, prev, cur, from, time.Now())
		if cur.Incarnation != prev.Incarnation || cur.Generation <= prev.Generation {
			t.Errorf("%s: published %d@%d after %d@%d: want the same incarnation, a later generation", what, cur.Generation, cur.Incarnation, prev.Generation, prev.Incarnation)
		}
		prev = cur
	}

	// The standbys' clocks step while they stand by; the leader dies.
	var standbys []int
	for _, m := range cr.ctls {
		if m != leader {
			standbys = append(standbys, m.member)
		}
	}
	clocks[standbys[0]].step.Store(int64(3 * time.Hour))
	clocks[standbys[1]].step.Store(int64(-3 * time.Hour))
	seen := cr.maxIncarnation()
	killed := time.Now()
	survivor := cr.r.open(t, ordered(cr.r.addrs, standbys[0]))
	leader.crash()
	elected := cr.leader(leader.name, survivor)
	cr.waitIncarnationAbove(seen, killed)
	from := time.Now()
	cr.addDIP(next)
	cur := cr.converged("after the failover")
	checkChangeTimes(t, "after the failover to "+elected.name, prev, cur, from, time.Now())
	if cur.Incarnation <= seen || uint32(cur.Incarnation) > uint32(time.Now().Unix())+5 {
		t.Errorf("after the failover to %s (clock stepped %v): incarnation %d; want above %d and not ahead of the real clock (%d)",
			elected.name, time.Duration(clocks[elected.member].step.Load()), cur.Incarnation, seen, time.Now().Unix())
	}
	cr.checkForward(ring.Pair{Incarnation: prev.Incarnation, Generation: prev.Generation}, seen)
	if lines := elected.book.find("the wall clock stepped"); len(lines) == 0 {
		t.Errorf("%s did not say its wall clock stepped; log:\n%s", elected.name, elected.book.String())
	}
}
