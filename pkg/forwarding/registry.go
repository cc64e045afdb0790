package forwarding

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Registry holds one layer's side of each strategy, by name: each
// strategy's package (pkg/strategy/NAME) registers its side in init(), and
// the layer looks it up (the layers' strategy interfaces: ctlstrategy,
// muxspi, agentspi, daemonspi, agentdspi, modelspi). A name registered
// twice is a build mistake and panics at start.
type Registry[T any] struct {
	layer string
	mu    sync.RWMutex
	m     map[Strategy]T
}

// NewRegistry is an empty registry of the named layer (for the panic).
func NewRegistry[T any](layer string) *Registry[T] {
	return &Registry[T]{layer: layer, m: map[Strategy]T{}}
}

// Register adds name's side.
func (r *Registry[T]) Register(name Strategy, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		panic(fmt.Sprintf("%s: strategy %q registered twice", r.layer, name))
	}
	r.m[name] = v
}

// Lookup is name's side, if registered.
func (r *Registry[T]) Lookup(name Strategy) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[name]
	return v, ok
}

// Names are the registered names, sorted.
func (r *Registry[T]) Names() []Strategy {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Strategy, 0, len(r.m))
	for name := range r.m {
		out = append(out, name)
	}
	slices.SortFunc(out, func(a, b Strategy) int { return strings.Compare(string(a), string(b)) })
	return out
}
