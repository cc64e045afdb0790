// Package storeloss loses updates between a control store and its reader,
// for experiments that ask what a reader does when its updates go missing
// (Spotlight's Fig. 14: AWFD class records lost on their way to a mux).
//
// It is a store.Store decorator: a read of a key it was told to damage
// returns, with the given probability, what the reader got the last time
// instead of the store's value, as if the update had not arrived. Readers
// re-read on a timer (the mux follows AWFD records every second), so each
// read is a fresh draw: an update is late by a geometric number of reads,
// the way a lossy periodic channel delays it. The product never imports
// this package; the lab wraps a mux's store with it (`beamer-lab mux
// --awfd-drop`).
package storeloss

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/beamer-lb/beamer/pkg/store"
)

// Store is a store.Store that loses reads of the keys Lossy matches.
type Store struct {
	store.Store
	lossy func(key string) bool
	p     float64

	mu      sync.Mutex
	rng     *rand.Rand
	last    map[string]lastRead
	dropped uint64
}

// lastRead is what a reader got from a lossy key last time.
type lastRead struct {
	item store.Item
	err  error
}

// Wrap returns st losing each read of a key lossy matches with probability
// p, in [0, 1]; seed makes a run repeatable.
func Wrap(st store.Store, lossy func(key string) bool, p float64, seed uint64) (*Store, error) {
	if !(p >= 0 && p <= 1) {
		return nil, fmt.Errorf("storeloss: loss probability %v is not in [0, 1]", p)
	}
	return &Store{Store: st, lossy: lossy, p: p, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), last: map[string]lastRead{}}, nil
}

// Get reads key from the store, or, for a lossy key, with probability p,
// returns what the previous read returned (ErrNotFound before the first).
func (s *Store) Get(ctx context.Context, key string) (store.Item, error) {
	if !s.lossy(key) {
		return s.Store.Get(ctx, key)
	}
	s.mu.Lock()
	lose := s.rng.Float64() < s.p
	if lose {
		s.dropped++
		prev, seen := s.last[key]
		s.mu.Unlock()
		if !seen {
			return store.Item{}, fmt.Errorf("storeloss: %s: %w (update lost)", key, store.ErrNotFound)
		}
		return store.Item{Value: bytes.Clone(prev.item.Value), Version: prev.item.Version}, prev.err
	}
	s.mu.Unlock()
	it, err := s.Store.Get(ctx, key)
	if err == nil || errors.Is(err, store.ErrNotFound) {
		s.mu.Lock()
		s.last[key] = lastRead{store.Item{Value: bytes.Clone(it.Value), Version: it.Version}, err}
		s.mu.Unlock()
	}
	return it, err
}

// Dropped is the number of reads lost so far.
func (s *Store) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}
