package controller

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// value reads a gauge or counter.
func value(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Gauge != nil {
		return d.GetGauge().GetValue()
	}
	return d.GetCounter().GetValue()
}

// TestControllerOpsMetrics runs an elected controller with metrics and
// checks what an operator reads off it: leadership, each instance's
// generation, ctl requests by result, and health transitions — the
// numbers behind what the controller logs.
func TestControllerOpsMetrics(t *testing.T) {
	root := newRoot()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	var dead atomic.Int64
	probe := func(_ context.Context, _ *forwarding.Instance, d DIP) error {
		if int64(d.ID) == dead.Load() {
			return errors.New("connection refused")
		}
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Run(ctx, shared, root, RunOptions{Identity: "ctl-m", ReconcileEvery: time.Hour,
			Options: Options{Metrics: m},
			Health:  &HealthOptions{Interval: 50 * time.Millisecond, Fall: 1, Rise: 1, Probe: probe}})
		close(done)
	}()
	defer func() { cancel(); <-done }()
	sctx := storetest.Context(t)
	submit := func(r Request) error { return Submit(sctx, shared, root, r, 20*time.Second) }
	if err := submit(Request{Op: OpCreateInstance, Config: webInstance(100)}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []forwarding.ServerID{1025, 1026} {
		if err := submit(Request{Op: OpAddDIP, Instance: "web", ID: id, Addr: dipAddr(id), Weight: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := submit(Request{Op: OpAddDIP, Instance: "web", ID: 1025, Addr: dipAddr(1030), Weight: 1}); err == nil {
		t.Fatal("duplicate id accepted")
	}
	dead.Store(1026)
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for i := 0; !ok(); i++ {
			if i > 200 {
				t.Fatalf("%s never happened", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("server 1026 down", func() bool {
		return value(t, m.ops.transitions.WithLabelValues("web", "down")) == 1
	})
	if v := value(t, m.ops.leader); v != 1 {
		t.Errorf("leader gauge %v while leading", v)
	}
	if v := value(t, m.ops.transitions.WithLabelValues("web", "up")); v != 2 {
		t.Errorf("%v transitions to up, want 2 (both servers' first good probe)", v)
	}
	for _, c := range []struct {
		op, result string
		want       float64
	}{{OpCreateInstance, "done", 1}, {OpAddDIP, "done", 2}, {OpAddDIP, "failed", 1}} {
		if v := value(t, m.ops.requests.WithLabelValues(c.op, c.result)); v != c.want {
			t.Errorf("requests{op=%s,result=%s} = %v, want %v", c.op, c.result, v, c.want)
		}
	}
	v, err := Show(sctx, shared, root, "web", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	waitFor("the generation gauge at the published generation", func() bool {
		return value(t, m.ops.generation.WithLabelValues("web")) >= float64(v.Generation)
	})
	// Every metric is exposed under its documented name.
	names, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range names {
		got = append(got, f.GetName())
	}
	for _, want := range []string{"beamer_controller_leader", "beamer_controller_generation", "beamer_controller_incarnation",
		"beamer_controller_requests_total", "beamer_controller_health_transitions_total"} {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("%s not exposed (have %v)", want, got)
		}
	}
	cancel()
	<-done
	if v := value(t, m.ops.leader); v != 0 {
		t.Errorf("leader gauge %v after the controller stopped", v)
	}
}
