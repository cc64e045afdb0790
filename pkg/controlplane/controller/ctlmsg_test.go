package controller

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// ringFault fails every commit that writes the mux ring while set: store
// trouble the controller can only retry.
type ringFault struct {
	store.Store
	on atomic.Bool
}

func (f *ringFault) Commit(ctx context.Context, ops ...store.Op) error {
	if f.on.Load() {
		for _, op := range ops {
			if strings.Contains(op.Key, "/ring/") {
				return errors.New("injected: no space left on device")
			}
		}
	}
	return f.Store.Commit(ctx, ops...)
}

// TestCtlSaysRetrying: a request the elected controller took but cannot
// finish (the store refuses its ring writes) times out in ctl with what is
// true — this controller took it, is retrying it, and why its last attempt
// failed — not "still working" nor "no controller"; once the store accepts
// writes again, the controller finishes it.
func TestCtlSaysRetrying(t *testing.T) {
	root := newRoot()
	fault := &ringFault{Store: shared}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Run(ctx, fault, root, RunOptions{Identity: "ctl-retry", ReconcileEvery: time.Hour, VerifyEvery: time.Hour})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	tctx := storetest.Context(t)
	if err := Submit(tctx, shared, root, Request{Op: OpCreateInstance, Config: webInstance(200)}, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	fault.on.Store(true)
	err := Submit(tctx, shared, root, Request{Op: OpAddDIP, Instance: "web", ID: 1025, Addr: dipAddr(1025), Weight: 1}, 3*time.Second)
	if !errors.Is(err, ErrNotFinished) || !strings.Contains(err.Error(), `controller "ctl-retry" took the request and is retrying it`) ||
		!strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("ctl said: %v", err)
	}
	t.Log(err)
	fault.on.Store(false)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		v, err := Show(tctx, shared, root, "web", time.Now())
		if err == nil && len(v.DIPs) == 1 && v.DIPs[0].Buckets == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retried request never completed: %+v, %v", v, err)
		}
	}
}
