package controller

import (
	"context"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
)

// TestServersGaugeWithoutHealthChecks: beamer_controller_servers counts the
// servers of a controller run with --no-health-checks too (it was set only
// by health-check rounds, so it never appeared there).
func TestServersGaugeWithoutHealthChecks(t *testing.T) {
	root := newRoot()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Run(ctx, shared, root, RunOptions{Identity: "ctl-nohealth", ReconcileEvery: time.Hour, Options: Options{Metrics: m}})
		close(done)
	}()
	defer func() { cancel(); <-done }()
	sctx := storetest.Context(t)
	submit := func(r Request) {
		t.Helper()
		if err := Submit(sctx, shared, root, r, 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	submit(Request{Op: OpCreateInstance, Config: webInstance(100)})
	for _, id := range []forwarding.ServerID{1025, 1026} {
		submit(Request{Op: OpAddDIP, Instance: "web", ID: id, Addr: dipAddr(id), Weight: 1})
	}
	deadline := time.Now().Add(10 * time.Second)
	for value(t, m.servers.WithLabelValues("web", "up")) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("beamer_controller_servers{lb_instance=web,health=up} = %v, want 2 without health checks", value(t, m.servers.WithLabelValues("web", "up")))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v := value(t, m.servers.WithLabelValues("web", "down")); v != 0 {
		t.Errorf("down = %v, want 0", v)
	}
}
