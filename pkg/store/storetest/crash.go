package storetest

import (
	"context"
	"errors"
	"sync"

	"github.com/beamer-lb/beamer/pkg/store"
)

// ErrCrashed is returned by a Crashing store once its budget is spent.
var ErrCrashed = errors.New("storetest: simulated crash")

// Crashing wraps a store so that the process using it "dies" after a given
// number of commits: the commit that would exceed the budget and every
// operation after it fail with ErrCrashed, and nothing more reaches the
// store. Running an operation with budgets 0, 1, 2, … until it completes
// kills it between every pair of its writes — which is all a crash can do
// to the store, since each commit is atomic.
type Crashing struct {
	store.Store
	mu      sync.Mutex
	left    int
	crashed bool
}

// NewCrashing allows budget commits through s.
func NewCrashing(s store.Store, budget int) *Crashing { return &Crashing{Store: s, left: budget} }

// Crashed reports whether the budget ran out.
func (c *Crashing) Crashed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.crashed
}

// Commit implements store.Store.
func (c *Crashing) Commit(ctx context.Context, ops ...store.Op) error {
	c.mu.Lock()
	if c.crashed || c.left == 0 {
		c.crashed = true
		c.mu.Unlock()
		return ErrCrashed
	}
	c.left--
	c.mu.Unlock()
	return c.Store.Commit(ctx, ops...)
}

// Get implements store.Store.
func (c *Crashing) Get(ctx context.Context, key string) (store.Item, error) {
	if c.Crashed() {
		return store.Item{}, ErrCrashed
	}
	return c.Store.Get(ctx, key)
}

// Children implements store.Store.
func (c *Crashing) Children(ctx context.Context, key string) ([]string, error) {
	if c.Crashed() {
		return nil, ErrCrashed
	}
	return c.Store.Children(ctx, key)
}

// Close does not close the wrapped store, which outlives the "process".
func (c *Crashing) Close() error { return nil }
