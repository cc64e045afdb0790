package controller

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// TestIncarnationCannotWrapOrBePushedAhead is issue 23's row "latest-gen =
// 42@4294967295": an incarnation written through the store's client (on
// embedded etcd and on a ZooKeeper server) at 2^32−1, at the clock + 1 day,
// and a whole sound ring at the clock + 1 day, under a live controller and
// a live mux follower. Each time the controller repairs from its own last
// state at an incarnation within the clock's bound (never wrapped, never
// taking the garbage as a floor), the mux never refuses anything (no
// refusal loop), and after the next ctl operations the running mux and a
// mux started afterwards equal the store bucket for bucket.
func TestIncarnationCannotWrapOrBePushedAhead(t *testing.T) {
	day := uint32(24 * time.Hour / time.Second)
	rows := []struct {
		name   string
		damage func(h *damageHarness, p ring.Pair)
	}{
		{"latest-gen at incarnation 2^32-1", func(h *damageHarness, p ring.Pair) {
			h.put(h.k.LatestGen(), []byte(ring.Pair{Incarnation: math.MaxUint32, Generation: p.Generation + 1}.String()))
		}},
		{"latest-gen at the clock + 1 day", func(h *damageHarness, p ring.Pair) {
			h.put(h.k.LatestGen(), []byte(ring.Pair{Incarnation: uint32(time.Now().Unix()) + day, Generation: p.Generation + 1}.String()))
		}},
		{"a sound ring at the clock + 1 day", func(h *damageHarness, p ring.Pair) {
			// Everything a writer with a clock a day ahead would write: a
			// resync blob of that incarnation and both pointers.
			ahead := func() time.Time { return time.Now().Add(24 * time.Hour) }
			w, _, err := ring.Repair(h.ctx, h.st, h.k, ring.WriterOptions{Now: ahead}, ring.Pair{}, nil)
			if err != nil {
				h.t.Fatal(err)
			}
			h.t.Logf("wrote %v", w.Pair())
		}},
	}
	backends(t, func(t *testing.T, open func() store.Store) {
		for _, row := range rows {
			t.Run(strings.ReplaceAll(row.name, " ", "_"), func(t *testing.T) {
				h := newDamageHarness(t, open, 3)
				before := h.pair()
				row.damage(h, before)
				h.waitLog("ring repaired")
				if err := h.submit(Request{Op: OpSetWeight, Instance: "web", ID: 1025, Weight: 3}); err != nil {
					t.Fatalf("ctl set-weight after the damage: %v", err)
				}
				h.addDIP(1040)
				late, _ := h.startMux()
				tab := h.converged(row.name, late)
				if tab.Incarnation <= before.Incarnation {
					t.Fatalf("store at %d@%d after the repair, not above %v", tab.Generation, tab.Incarnation, before)
				}
				if limit := time.Now().Add(ring.MaxIncarnationLead).Unix(); int64(tab.Incarnation) > limit {
					t.Fatalf("store at incarnation %d, beyond the clock + %v (%d): the damage was taken as a floor", tab.Incarnation, ring.MaxIncarnationLead, limit)
				}
				if tab.Servers[1040].State != forwarding.Active {
					t.Fatalf("the request after the damage is not in the ring: %+v", tab.Servers)
				}
				if n := h.fol.Status().Refused; n != 0 {
					t.Fatalf("the mux refused %d store states: a refusal loop", n)
				}
				line := h.waitLog("ring repaired", "ahead of the clock", "damage, not a floor")
				t.Logf("%v → %d@%d: %s", before, tab.Generation, tab.Incarnation, line)
			})
		}
	})
}

// TestCtlDoneOnlyWhenMuxesCanAccept: a controller whose clock went a day
// back, after it published, cannot begin an incarnation above what the
// muxes run without leading its clock by more than the bound. A repair it
// then needs is refused, not published lower (which muxes would refuse as
// a rollback) nor far ahead: ctl does not report the request done, it says
// the controller is retrying and why. Once the clock is right, the same
// request completes (the controller kept it) and the mux follows.
func TestCtlDoneOnlyWhenMuxesCanAccept(t *testing.T) {
	h := newDamageHarness(t, func() store.Store { return shared }, 2)
	before := h.pair()
	h.skew.Store(-int64(24 * time.Hour / time.Second))
	h.put(h.k.LatestGen(), []byte("garbage"))
	err := Submit(h.ctx, h.st, h.root, Request{Op: OpAddDIP, Instance: "web", ID: 1040, Addr: dipAddr(1040), Weight: 1}, 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "incarnation") {
		t.Fatalf("ctl add-dip with the controller's clock a day back: %v", err)
	}
	t.Logf("ctl: %v", err)
	if n := h.fol.Status().Refused; n != 0 {
		t.Fatalf("the mux refused %d store states", n)
	}
	h.skew.Store(0)
	h.addDIP(1041) // served after the request above, which the controller kept
	tab := h.converged("clock right again")
	if tab.Incarnation <= before.Incarnation || tab.Servers[1040].State != forwarding.Active || tab.Servers[1041].State != forwarding.Active {
		t.Fatalf("after the clock is right: %d@%d, servers %+v", tab.Generation, tab.Incarnation, tab.Servers)
	}
}

// TestFailoverOneResync is issue 28's row "controller failover": a new
// leader (here with connection holds on, as `beamer controller` runs by
// default, whose agent polls start before the recovery) begins exactly one
// new incarnation per instance, and a mux following the store loads
// exactly one whole table for the failover.
func TestFailoverOneResync(t *testing.T) {
	backends(t, func(t *testing.T, open func() store.Store) {
		root := newRoot()
		ctx := context.Background()
		var logMu sync.Mutex
		books := map[string]*logBook{}
		start := func(name string) func() {
			st := open()
			book, logger := newLogBook()
			logMu.Lock()
			books[name] = book
			logMu.Unlock()
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() {
				Run(cctx, st, root, RunOptions{Options: Options{Logger: logger}, Identity: name, ReconcileEvery: time.Hour, VerifyEvery: 200 * time.Millisecond,
					Holds: &HoldOptions{Interval: time.Second, Client: newFakeAgents()}})
				close(done)
			}()
			var once sync.Once
			stop := func() { once.Do(func() { cancel(); <-done }) }
			t.Cleanup(stop)
			return stop
		}
		starts := func(name string) (n int, lines []string) {
			logMu.Lock()
			book := books[name]
			logMu.Unlock()
			for _, l := range book.all() {
				if strings.Contains(l, "instance=web") && (strings.Contains(l, "new incarnation") || strings.Contains(l, "ring repaired")) {
					n++
					lines = append(lines, l)
				}
			}
			return n, lines
		}
		h := &damageHarness{t: t, ctx: ctx, st: open(), root: root, k: ring.InstanceKeys(root, "web"), forks: &forkBook{seen: map[ring.Pair]uint64{}}}
		waitLeader := func(want string) {
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if l, err := h.st.Leader(ctx, ElectionKey(root)); err == nil && l == want {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s never elected", want)
				}
			}
		}
		stopA := start("ctl-a")
		waitLeader("ctl-a")
		if err := h.submit(Request{Op: OpCreateInstance, Config: webInstance(600)}); err != nil {
			t.Fatal(err)
		}
		for id := forwarding.ServerID(1025); id < 1028; id++ {
			h.addDIP(id)
		}
		h.mux, h.fol = h.startMux()
		h.converged("before the failover")
		start("ctl-b")
		resyncsBefore, pairsBefore := h.fol.Status().Resyncs, len(h.mux.pairs)
		stopA()
		waitLeader("ctl-b")
		// A request is served after the new leader's recovery.
		h.addDIP(1028)
		tab := h.converged("after the failover")
		time.Sleep(time.Second) // a second incarnation would come within milliseconds
		tab = h.converged("a second after the failover")
		n, lines := starts("ctl-b")
		if n != 1 {
			t.Fatalf("the new leader began %d incarnations of the instance, want 1:\n%s", n, strings.Join(lines, "\n"))
		}
		h.mux.mu.Lock()
		incs := map[uint32]bool{}
		for _, p := range h.mux.pairs[pairsBefore:] {
			incs[p.Incarnation] = true
		}
		h.mux.mu.Unlock()
		if r := h.fol.Status().Resyncs - resyncsBefore; r != 1 || len(incs) != 1 {
			t.Fatalf("the mux loaded %d whole tables, of %d incarnations, for one failover; want 1", r, len(incs))
		}
		t.Logf("failover: %s; the mux runs %d@%d", lines[0], tab.Generation, tab.Incarnation)
	})
}
