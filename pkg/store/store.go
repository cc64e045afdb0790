// Package store is the control store Beamer keeps its configuration and mux
// ring in: a small hierarchical key-value interface that etcd (embedded or
// external) and ZooKeeper both implement with the same semantics, so the
// controller and the muxes never know which one they talk to.
//
// Keys are absolute slash-separated paths ("/beamer/instances/web/config").
// A key may have a value and children at the same time. Writes go through
// Commit, which applies a list of operations atomically: either all of them
// take effect or none does. Conditions (IfVersion, IfAbsent) make a Commit
// fail with ErrConflict when the store is not in the expected state; the
// controller's leadership fence is such a condition, which is how "only one
// controller writes" is enforced by the store itself rather than by timing.
//
// Backends: pkg/store/etcdstore (embedded or external etcd) and
// pkg/store/zkstore (ZooKeeper). Open in pkg/store/storeurl picks one from a
// URL. pkg/store/storetest is the conformance suite both pass.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Errors every backend returns (wrapped) for the same situations.
var (
	// ErrNotFound: the key has no value.
	ErrNotFound = errors.New("store: key not found")
	// ErrConflict: a condition of a Commit did not hold; nothing was written.
	ErrConflict = errors.New("store: condition failed")
	// ErrTooLarge: a value or a Commit exceeds what the backend accepts.
	ErrTooLarge = errors.New("store: value too large")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("store: closed")
)

// Item is a value with the version it was read at.
type Item struct {
	Value []byte
	// Version identifies this write of the key; it changes on every Put.
	// It is opaque: only compare it for equality or pass it to IfVersion.
	// It is never 0 for an existing key.
	Version int64
}

// OpKind says what an Op does.
type OpKind uint8

const (
	// OpPut creates or replaces a key's value.
	OpPut OpKind = iota + 1
	// OpDelete removes a key's value; deleting an absent key is not an
	// error. Children are not removed (see DeleteTree).
	OpDelete
	// OpCheck is a condition: the key's version must equal Version
	// (0 = the key must not exist).
	OpCheck
)

// Op is one operation of a Commit.
type Op struct {
	Kind    OpKind
	Key     string
	Value   []byte
	Version int64 // OpCheck only
}

// Put returns an operation that sets key to value.
func Put(key string, value []byte) Op { return Op{Kind: OpPut, Key: key, Value: value} }

// Delete returns an operation that removes key.
func Delete(key string) Op { return Op{Kind: OpDelete, Key: key} }

// IfVersion returns a condition that key is still at version.
func IfVersion(key string, version int64) Op { return Op{Kind: OpCheck, Key: key, Version: version} }

// IfAbsent returns a condition that key has no value.
func IfAbsent(key string) Op { return Op{Kind: OpCheck, Key: key} }

// Store is a hierarchical key-value store with atomic multi-key commits,
// change notifications and leader election.
type Store interface {
	// Get returns the value of key, or an error wrapping ErrNotFound.
	Get(ctx context.Context, key string) (Item, error)
	// Children returns the names (last path element) of the direct
	// children of key, sorted. A key without children gives an empty list.
	Children(ctx context.Context, key string) ([]string, error)
	// Commit applies ops atomically. If a condition fails it returns an
	// error wrapping ErrConflict and changes nothing.
	Commit(ctx context.Context, ops ...Op) error
	// Watch returns a channel that receives a value after key may have
	// changed: once when the watch is set up, after every change, and after
	// the connection to the store was re-established (changes may have been
	// missed). Notifications coalesce; the receiver re-reads the key. The
	// channel is closed when ctx is done or the Store is closed.
	Watch(ctx context.Context, key string) <-chan struct{}
	// Campaign blocks until this process leads the election named by key
	// (or ctx is done). identity is shown to others by Leader.
	Campaign(ctx context.Context, key, identity string) (Leadership, error)
	// Leader returns the identity of the current leader of the election
	// named by key, or an error wrapping ErrNotFound when there is none.
	Leader(ctx context.Context, key string) (string, error)
	// MaxValueSize is the largest value a single Put may carry.
	MaxValueSize() int
	// Close releases the connection; leaderships end.
	Close() error
}

// Leadership is held until Resign, the Store is closed, or the backend loses
// its session (lease expiry, ZooKeeper session expiry).
type Leadership interface {
	// Fence is a condition that holds only while this leadership lasts.
	// Adding it to a Commit makes the Commit fail with ErrConflict once
	// another process may have become leader.
	Fence() Op
	// Lost is closed when the leadership ended for any reason.
	Lost() <-chan struct{}
	// Resign gives the leadership up.
	Resign(ctx context.Context) error
}

// ValidKey reports whether key is absolute, has no empty element and does
// not end in a slash.
func ValidKey(key string) error {
	if !strings.HasPrefix(key, "/") || len(key) < 2 || strings.HasSuffix(key, "/") || strings.Contains(key, "//") {
		return fmt.Errorf("store: invalid key %q: must be /a/b/c", key)
	}
	return nil
}

// Join builds a key from a parent key and child names.
func Join(parent string, names ...string) string {
	return strings.TrimSuffix(parent, "/") + "/" + strings.Join(names, "/")
}

// CheckOps validates the keys of a Commit and that its values add up to at
// most limit bytes: one Commit is one request, and both etcd and ZooKeeper
// bound the size of a request, not of a value (ZooKeeper even drops the
// connection when a request is too large).
func CheckOps(ops []Op, limit int) error {
	total := 0
	for _, op := range ops {
		if err := ValidKey(op.Key); err != nil {
			return err
		}
		total += len(op.Value)
	}
	if total > limit {
		return fmt.Errorf("commit of %s: %w: %d bytes of values > %d", ops[0].Key, ErrTooLarge, total, limit)
	}
	return nil
}
