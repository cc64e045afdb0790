package controller

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
)

// readsFail is a store whose reads fail: the store connection lost while
// a submitted request's outcome is awaited.
type readsFail struct{ store.Store }

func (readsFail) Get(context.Context, string) (store.Item, error) {
	return store.Item{}, errors.New("zk: connection closed")
}

// TestSubmitOutcomeUnknownAfterSubmission: once a request is in the store
// a controller may run it, so a store failure while its outcome is
// awaited reports the outcome unknown, never a failure (the partition
// rig's checker found a remove-dip reported failed that had been made).
func TestSubmitOutcomeUnknownAfterSubmission(t *testing.T) {
	root := newRoot()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := SubmitResult(ctx, readsFail{shared}, root, Request{Op: OpDrain, Instance: "web", ID: 1025}, time.Second)
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("SubmitResult with the store lost after submitting: %v, want the outcome unknown", err)
	}
	names, lerr := shared.Children(ctx, requestsKey(root))
	if lerr != nil || len(names) != 1 {
		t.Fatalf("the request is not in the store (%v, %v): nothing submitted, so the test proves nothing", names, lerr)
	}
}
