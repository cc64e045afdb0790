package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestHostDo: a strategy's background work reaches the controller's loop
// only through Host.Do. Outside controller.Run there is no loop, and Do
// says so instead of blocking; with a loop, f runs there and its error
// comes back; a caller whose context ends is not held by a busy loop.
func TestHostDo(t *testing.T) {
	ctx := context.Background()
	h := NewHost(shared, newRoot(), forwarding.StrategyPrism, HostOptions{})
	if err := h.Do(ctx, "x", func(context.Context, ctlstrategy.Ctl) error { return nil }); err == nil {
		t.Fatal("Do without a loop succeeded")
	}

	loop := make(chan loopWork)
	c := New(shared, newRoot(), Options{})
	go func() {
		w := <-loop
		w.done <- w.f(ctx, c.Ctl(w.name))
	}()
	h = NewHost(shared, newRoot(), forwarding.StrategyPrism, HostOptions{Loop: loop})
	want := errors.New("from the loop")
	var gotName string
	err := h.Do(ctx, "x", func(_ context.Context, ctl ctlstrategy.Ctl) error {
		gotName = "ran"
		return want
	})
	if !errors.Is(err, want) || gotName != "ran" {
		t.Fatalf("Do: %v, ran %q", err, gotName)
	}

	busy := NewHost(shared, newRoot(), forwarding.StrategyPrism, HostOptions{Loop: make(chan loopWork)})
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := busy.Do(cctx, "x", func(context.Context, ctlstrategy.Ctl) error { return nil }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do on a busy loop: %v, want the caller's deadline", err)
	}
}

// TestRotateKeyNeedsKeys: a rotation of an instance whose strategy holds
// no keys is refused as a bad request that names the operation.
func TestRotateKeyNeedsKeys(t *testing.T) {
	ctx := context.Background()
	c := New(shared, newRoot(), Options{})
	if err := c.CreateInstance(ctx, webInstance(64)); err != nil {
		t.Fatal(err)
	}
	_, err := c.RotateKey(ctx, "web", ctlstrategy.KeyRotation{})
	if !errors.Is(err, ErrBadRequest) {
		t.Fatalf("rotation of a beamer instance: %v, want a bad request", err)
	}
	if _, err := c.RotateKey(ctx, "none", ctlstrategy.KeyRotation{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rotation of a missing instance: %v, want not found", err)
	}
}
