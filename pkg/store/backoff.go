package store

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is an exponential, jittered retry pause, used by watchers and by
// mux followers so that many muxes do not reconnect to a recovering store
// in lock step.
type Backoff struct {
	min, max, next time.Duration
}

// NewBackoff returns a Backoff starting at lo and doubling up to hi.
func NewBackoff(lo, hi time.Duration) *Backoff { return &Backoff{min: lo, max: hi, next: lo} }

// Reset starts again from the shortest pause.
func (b *Backoff) Reset() { b.next = b.min }

// Next returns the next pause and doubles the one after.
func (b *Backoff) Next() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.max)
	// ±25 % jitter
	return d*3/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}

// Sleep waits for the next pause; false if ctx ended first.
func (b *Backoff) Sleep(ctx context.Context) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// Notify sends on a coalescing notification channel (capacity 1) without
// blocking: a pending notification already says "look again".
func Notify(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
