package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// healthRig is a controller with health checks whose probe results the
// test sets per server id.
type healthRig struct {
	c    *Controller
	root string
	clk  *clock
	hc   *checker
	mu   sync.Mutex
	fail map[forwarding.ServerID]error
	logs *logBook
}

func newHealthRig(t *testing.T) *healthRig {
	book, logger := newLogBook()
	r := &healthRig{root: newRoot(), clk: newClock(), fail: map[forwarding.ServerID]error{}, logs: book}
	r.c = New(shared, r.root, Options{Now: r.clk.now, PendingUntilProbed: true})
	r.hc = newChecker(HealthOptions{
		Probe: func(_ context.Context, _ *forwarding.Instance, d DIP) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.fail[d.ID]
		},
		Logger: logger,
	})
	if err := r.c.CreateInstance(storetest.Context(t), webInstance(60)); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *healthRig) setFail(err error, ids ...forwarding.ServerID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if err == nil {
			delete(r.fail, id)
		} else {
			r.fail[id] = err
		}
	}
}

func (r *healthRig) rounds(t *testing.T, n int) {
	t.Helper()
	for range n {
		r.clk.advance(r.hc.opts.Interval)
		if err := r.hc.round(storetest.Context(t), r.c); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *healthRig) owners(t *testing.T) map[forwarding.ServerID]int {
	t.Helper()
	tab, _, err := ring.NewFollower(shared, ring.InstanceKeys(r.root, "web"), ring.FollowerOptions{}).Load(storetest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	m := map[forwarding.ServerID]int{}
	for _, b := range tab.Buckets {
		m[b.Current]++
	}
	return m
}

func (r *healthRig) show(t *testing.T) *View {
	t.Helper()
	v, err := Show(storetest.Context(t), shared, r.root, "web", r.clk.now())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (r *healthRig) logged(s string) bool {
	return len(r.logs.find(s)) > 0
}

// TestHealthPendingFailOpenClear runs the controller's health rounds with
// scripted probe results: servers added in one batch stay pending (own no
// bucket) until their first good probe, and come up together in one
// generation; when every server is down the instance fails open (owners
// kept, error logged every round, shown by ctl show) until one is back;
// a flapping server is suppressed until the operator clears damping.
func TestHealthPendingFailOpenClear(t *testing.T) {
	r := newHealthRig(t)
	ctx := storetest.Context(t)
	refused := errors.New("agent 10.0.4.3:9300: connect 192.0.2.1:80 on the server: connection refused")
	r.setFail(refused, 1027)
	var batch []NewDIP
	for id := forwarding.ServerID(1025); id <= 1027; id++ {
		batch = append(batch, NewDIP{ID: id, Addr: dipAddr(id), Weight: 1})
	}
	if err := r.c.AddDIPs(ctx, "web", batch); err != nil {
		t.Fatal(err)
	}
	if o := r.owners(t); o[forwarding.NoServer] != 60 {
		t.Fatalf("owners before any probe: %v; pending servers must own nothing", o)
	}
	gen := r.show(t).Generation
	r.rounds(t, 1)
	v := r.show(t)
	if o := r.owners(t); o[1025] != 30 || o[1026] != 30 || o[1027] != 0 {
		t.Fatalf("owners after one round (1027 failing): %v", o)
	}
	if v.Generation != gen+1 {
		t.Fatalf("two servers up in one round took %d generations, want 1", v.Generation-gen)
	}
	if d := v.DIPs[2]; d.Health != "pending" || d.LastError != refused.Error() {
		t.Fatalf("failing new server in ctl show: %+v; want pending with its probe error", d)
	}
	r.setFail(nil, 1027)
	r.rounds(t, 1)
	if o := r.owners(t); o[1027] != 20 {
		t.Fatalf("owners after 1027's first good probe: %v", o)
	}
	if !r.logged("server=1027") || !r.logged("first probe succeeded") {
		t.Fatalf("state change not logged: %q", r.logs.all())
	}

	// Every server down: fail open, owners unchanged, loud every round.
	before := r.owners(t)
	r.setFail(refused, 1025, 1026, 1027)
	r.rounds(t, 3)
	if o := r.owners(t); fmt.Sprint(o) != fmt.Sprint(before) {
		t.Fatalf("all servers down: owners %v, want the last owners %v kept", o, before)
	}
	v = r.show(t)
	if !v.FailOpen || len(v.Warnings) == 0 || !strings.Contains(v.Warnings[0], "FAILING OPEN") || v.DIPs[0].Health != "down" {
		t.Fatalf("ctl show during fail-open: fail_open=%v warnings=%q dip=%+v", v.FailOpen, v.Warnings, v.DIPs[0])
	}
	if !strings.Contains(v.DIPs[0].Reason, "connection refused") {
		t.Fatalf("down reason %q does not carry the probe error", v.DIPs[0].Reason)
	}
	failOpen := []string{"level=ERROR", "all servers are down", "instance=web", "servers_down=3"}
	n := len(r.logs.find(failOpen...))
	r.rounds(t, 2)
	m := len(r.logs.find(failOpen...))
	if n == 0 || m != n+2 {
		t.Fatalf("fail-open logged %d then %d times; want an error every round", n, m)
	}
	// One back: it takes everything, fail-open ends.
	r.setFail(nil, 1026)
	r.rounds(t, 2)
	if o := r.owners(t); o[1026] != 60 {
		t.Fatalf("owners with only 1026 up: %v", o)
	}
	if r.show(t).FailOpen {
		t.Fatal("still failing open with a server up")
	}

	// 1025 flaps until suppressed; clear damping brings it back.
	r.setFail(nil, 1025)
	r.rounds(t, 2)
	for range 2 {
		r.setFail(refused, 1025)
		r.rounds(t, 3)
		r.setFail(nil, 1025)
		r.rounds(t, 2)
	}
	if d := r.show(t).DIPs[0]; d.Health != "suppressed" || d.PenaltyNow < 2.5 {
		t.Fatalf("flapping server: %+v; want suppressed", d)
	}
	if o := r.owners(t); o[1025] != 0 {
		t.Fatalf("suppressed server owns %d buckets", o[1025])
	}
	if err := r.c.ClearDamping(ctx, "web", 1025); err != nil {
		t.Fatal(err)
	}
	if d := r.show(t).DIPs[0]; d.Suppressed || d.PenaltyNow != 0 || d.Reason != "damping cleared by the operator" {
		t.Fatalf("after clear: %+v", d)
	}
	r.rounds(t, 1)
	if o := r.owners(t); o[1025] != 30 {
		t.Fatalf("owners after damping cleared and a good probe: %v", o)
	}
	if err := r.c.ClearDamping(ctx, "web", 1099); !errors.Is(err, ErrNotFound) {
		t.Fatalf("clear damping of an unknown server: %v", err)
	}
}

// TestPendingReleasedWithoutHealthChecks: DIPs left pending by a
// controller with health checks are taken out of pending by one without
// them (nothing would ever probe them).
func TestPendingReleasedWithoutHealthChecks(t *testing.T) {
	r := newHealthRig(t)
	ctx := storetest.Context(t)
	if err := r.c.AddDIPs(ctx, "web", []NewDIP{{1025, dipAddr(1025), 1}, {1026, dipAddr(1026), 1}}); err != nil {
		t.Fatal(err)
	}
	if o := r.owners(t); o[forwarding.NoServer] != 60 {
		t.Fatalf("owners while pending: %v", o)
	}
	c := New(shared, r.root, Options{Now: r.clk.now})
	if err := c.releasePending(ctx); err != nil {
		t.Fatal(err)
	}
	if o := r.owners(t); o[1025] != 30 || o[1026] != 30 {
		t.Fatalf("owners after release: %v", o)
	}
}
