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
)

// TestTwoControllersFailover runs two controller processes' loops: one
// leads and serves `ctl` requests; when it stops, the other takes over and
// serves the next request. Health checks of the leader mark a DIP whose
// probe fails down.
func TestTwoControllersFailover(t *testing.T) {
	root := newRoot()
	var dead atomic.Uint32 // id whose probe fails
	probe := func(_ context.Context, _ *forwarding.Instance, d DIP) error {
		if d.Addr == dipAddr(forwarding.ServerID(dead.Load())) {
			return errors.New("refused")
		}
		return nil
	}
	start := func(name string) context.CancelFunc {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			Run(ctx, shared, root, RunOptions{Identity: name, ReconcileEvery: time.Hour,
				Health: &HealthOptions{Interval: 50 * time.Millisecond, Probe: probe}})
			close(done)
		}()
		stop := func() { cancel(); <-done }
		t.Cleanup(stop)
		return stop
	}
	stopA := start("ctl-a")
	ctx := storetest.Context(t)
	waitLeader := func(want string) {
		for i := 0; ; i++ {
			if l, err := shared.Leader(ctx, ElectionKey(root)); err == nil && l == want {
				return
			}
			if i > 300 {
				t.Fatalf("%s never elected", want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitLeader("ctl-a")
	start("ctl-b")
	submit := func(r Request) error { return Submit(ctx, shared, root, r, 20*time.Second) }
	if err := submit(Request{Op: OpCreateInstance, Config: webInstance(100)}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []forwarding.ServerID{1025, 1026} {
		if err := submit(Request{Op: OpAddDIP, Instance: "web", ID: id, Addr: dipAddr(id), Weight: 1}); err != nil {
			t.Fatal(err)
		}
	}
	err := submit(Request{Op: OpAddDIP, Instance: "web", ID: 1025, Addr: dipAddr(1030), Weight: 1})
	if err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("duplicate id through ctl: %v", err)
	}
	stopA()
	waitLeader("ctl-b")
	if err := submit(Request{Op: OpAddDIP, Instance: "web", ID: 1027, Addr: dipAddr(1027), Weight: 1}); err != nil {
		t.Fatalf("after failover: %v", err)
	}
	dead.Store(1026)
	for i := 0; ; i++ {
		v, err := Show(ctx, shared, root, "web", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if v.DIPs[1].Down && v.DIPs[1].Buckets == 0 {
			break
		}
		if i > 200 {
			t.Fatalf("failed DIP not taken out: %+v", v.DIPs[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
	checkInvariants(t, root)
}

func TestSubmitWithoutController(t *testing.T) {
	root := newRoot()
	err := Submit(storetest.Context(t), shared, root, Request{Op: OpDeleteInstance, Instance: "x"}, 300*time.Millisecond)
	if !errors.Is(err, ErrNoController) || !strings.Contains(err.Error(), "beamer controller") {
		t.Fatalf("submit with no controller: %v", err)
	}
	if names, _ := shared.Children(storetest.Context(t), requestsKey(root)); len(names) != 0 {
		t.Fatalf("withdrawn request left behind: %v", names)
	}
}
