package ring

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestFollowerSurvivesOutage stops the store server under a running
// follower: it keeps its table, reports errors, and catches up with what
// was published once the server is back.
func TestFollowerSurvivesOutage(t *testing.T) {
	srv := storetest.StartEtcd(t)
	ctx := storetest.Context(t)
	open := func() *etcdstore.Store {
		s, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{srv.Addr}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ctl, mux := open(), open()
	k := InstanceKeys("/outage", "web")
	w, err := Create(ctx, ctl, k, testInstance("web", 2000), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(13, 13))
	if _, err := w.Publish(ctx, nextDelta(rng, w.Table())); err != nil {
		t.Fatal(err)
	}
	f := NewFollower(mux, k, FollowerOptions{Poll: 200 * time.Millisecond, RoundTimeout: time.Second, MinBackoff: 50 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	tab, _, err := f.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{table: tab.Clone()}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { f.Run(rctx, tab, r); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	srv.Stop()
	waitFor(t, "errors reported during the outage", func() bool { return f.Status().Errors >= 2 })
	if r.generation() != 1 || f.Status().Generation != 1 {
		t.Fatalf("state lost during the outage: generation %d", r.generation())
	}
	srv.Start()
	// The controller publishes as soon as the store is back.
	w, err = Open(ctx, ctl, k, WriterOptions{})
	for i := 0; err != nil && i < 50; i++ {
		time.Sleep(100 * time.Millisecond)
		w, err = Open(ctx, ctl, k, WriterOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Publish(ctx, nextDelta(rng, w.Table())); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "catch-up after the outage", func() bool { return r.generation() == 2 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if !reflect.DeepEqual(r.table, w.Table()) {
		t.Fatal("tables differ after the outage")
	}
}
