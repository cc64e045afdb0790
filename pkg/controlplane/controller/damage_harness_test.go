package controller

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/store/zkstore"
)

// muxModel is an in-memory mux data plane behind a ring.Follower. It
// records every pair it installs and fails the test on a pair lower than
// the one it runs (a rollback) or on one pair with two contents (a fork,
// checked against every content any model or the store showed for it).
type muxModel struct {
	t      *testing.T
	forks  *forkBook
	mu     sync.Mutex
	table  *forwarding.Table
	pairs  []ring.Pair
	faults []string
}

type forkBook struct {
	mu   sync.Mutex
	seen map[ring.Pair]uint64
}

func (b *forkBook) record(p ring.Pair, t *forwarding.Table) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	h := tableHash(t)
	if old, ok := b.seen[p]; ok && old != h {
		return fmt.Sprintf("fork: pair %v seen with two contents", p)
	}
	b.seen[p] = h
	return ""
}

func tableHash(t *forwarding.Table) uint64 {
	h := fnv.New64a()
	for _, b := range t.Buckets {
		fmt.Fprint(h, b.Current, b.History, b.Changed, ";")
	}
	ids := make([]int, 0, len(t.Servers))
	for id := range t.Servers {
		ids = append(ids, int(id))
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprint(h, id, t.Servers[forwarding.ServerID(id)], ";")
	}
	return h.Sum64()
}

func (m *muxModel) install(t *forwarding.Table) {
	p := ring.Pair{Incarnation: t.Incarnation, Generation: t.Generation}
	if n := len(m.pairs); n > 0 && p.Less(m.pairs[n-1]) {
		m.faults = append(m.faults, fmt.Sprintf("rollback: %v after %v", p, m.pairs[n-1]))
	}
	if f := m.forks.record(p, t); f != "" {
		m.faults = append(m.faults, f)
	}
	m.pairs = append(m.pairs, p)
	m.table = t
}

func (m *muxModel) ApplyDelta(d *forwarding.Delta) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.table.Clone()
	if err := next.Apply(d); err != nil {
		return err
	}
	m.install(next)
	return nil
}

func (m *muxModel) Replace(t *forwarding.Table) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.install(t)
	return nil
}

func (m *muxModel) snapshot() (*forwarding.Table, []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.table.Clone(), slices.Clone(m.faults)
}

// damageHarness runs a live controller (Run, as `beamer controller` does)
// and a live mux follower on one store, for an instance "web".
type damageHarness struct {
	t     *testing.T
	ctx   context.Context
	st    store.Store // the attacker's and the mux's client
	root  string
	k     ring.Keys
	forks *forkBook
	mux   *muxModel
	fol   *ring.Follower
	book  *logBook // the controller's log
	// skew moves the controller's clock (seconds); 0: the real clock.
	skew atomic.Int64
}

// now is the controller's clock.
func (h *damageHarness) now() time.Time {
	return time.Now().Add(time.Duration(h.skew.Load()) * time.Second)
}

// backends runs f on embedded etcd and on a ZooKeeper server process, each
// with its own controller client and mux client.
func backends(t *testing.T, f func(t *testing.T, open func() store.Store)) {
	t.Run("etcd", func(t *testing.T) {
		f(t, func() store.Store { return shared })
	})
	t.Run("zookeeper", func(t *testing.T) {
		srv := storetest.StartZooKeeper(t)
		f(t, func() store.Store {
			s, err := zkstore.Open(context.Background(), zkstore.Config{Servers: []string{srv.Addr}, SessionTimeout: 2 * time.Second, DialTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		})
	})
}

func newDamageHarness(t *testing.T, open func() store.Store, dips int) *damageHarness {
	book, logger := newLogBook()
	h := &damageHarness{t: t, ctx: storetest.Context(t), st: open(), root: newRoot(), forks: &forkBook{seen: map[ring.Pair]uint64{}}, book: book}
	h.k = ring.InstanceKeys(h.root, "web")
	ctl := open()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		Run(ctx, ctl, h.root, RunOptions{Options: Options{Now: h.now, Logger: logger}, Identity: "ctl-test", ReconcileEvery: time.Hour, VerifyEvery: 200 * time.Millisecond})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done })
	if err := h.submit(Request{Op: OpCreateInstance, Config: webInstance(600)}); err != nil {
		t.Fatal(err)
	}
	for i := range dips {
		h.addDIP(forwarding.ServerID(1025 + i))
	}
	h.mux, h.fol = h.startMux()
	h.converged("start")
	return h
}

func (h *damageHarness) submit(r Request) error {
	return Submit(h.ctx, h.st, h.root, r, 20*time.Second)
}

func (h *damageHarness) addDIP(id forwarding.ServerID) {
	h.t.Helper()
	if err := h.submit(Request{Op: OpAddDIP, Instance: "web", ID: id, Addr: dipAddr(id), Weight: 1}); err != nil {
		h.t.Fatalf("add-dip %d: %v", id, err)
	}
}

// startMux loads the instance as a mux does and follows it.
func (h *damageHarness) startMux() (*muxModel, *ring.Follower) {
	m := &muxModel{t: h.t, forks: h.forks}
	f := ring.NewFollower(h.st, h.k, ring.FollowerOptions{Poll: 100 * time.Millisecond, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	tab, _, err := f.Load(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	m.Replace(tab)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx, tab, m); close(done) }()
	h.t.Cleanup(func() { cancel(); <-done })
	return m, f
}

// store loads the store's current ring as a freshly started mux would.
func (h *damageHarness) store() (*forwarding.Table, error) {
	tab, _, err := ring.NewFollower(h.st, h.k, ring.FollowerOptions{}).Load(h.ctx)
	if err == nil {
		if f := h.forks.record(ring.Pair{Incarnation: tab.Incarnation, Generation: tab.Generation}, tab); f != "" {
			h.t.Error(f)
		}
	}
	return tab, err
}

func (h *damageHarness) pair() ring.Pair {
	tab, err := h.store()
	if err != nil {
		h.t.Fatalf("store does not load: %v", err)
	}
	return ring.Pair{Incarnation: tab.Incarnation, Generation: tab.Generation}
}

// converged waits until the store loads and every model holds exactly its
// content, bucket for bucket, then checks no model ever went back or forked.
func (h *damageHarness) converged(what string, models ...*muxModel) *forwarding.Table {
	h.t.Helper()
	models = append(models, h.mux)
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := h.store()
		same := err == nil
		for _, m := range models {
			if m == nil {
				continue
			}
			tab, faults := m.snapshot()
			for _, f := range faults {
				h.t.Fatalf("%s: %s", what, f)
			}
			same = same && tab.Incarnation == st.Incarnation && tab.Generation == st.Generation && tableHash(tab) == tableHash(st)
		}
		if same {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: muxes never converged to the store (store error %v); controller log:\n%s", what, err, h.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (h *damageHarness) log() string {
	return h.book.String()
}

// waitLog waits for a controller log line containing all of words.
func (h *damageHarness) waitLog(words ...string) string {
	h.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if lines := h.book.find(words...); len(lines) > 0 {
			return lines[0]
		}
	}
	h.t.Fatalf("no controller log line with %q; log:\n%s", words, h.log())
	return ""
}

// put writes raw values through the store's client, as an attacker or a
// careless operator would.
func (h *damageHarness) put(key string, v []byte) {
	h.t.Helper()
	if err := h.st.Commit(h.ctx, store.Put(key, v)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *damageHarness) del(key string) {
	h.t.Helper()
	if err := h.st.Commit(h.ctx, store.Delete(key)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *damageHarness) get(key string) []byte {
	h.t.Helper()
	it, err := h.st.Get(h.ctx, key)
	if err != nil {
		h.t.Fatal(err)
	}
	return it.Value
}

// backup reads every key of the instance, as a store backup holds them.
func (h *damageHarness) backup() map[string][]byte {
	out := map[string][]byte{}
	var walk func(key string)
	walk = func(key string) {
		if it, err := h.st.Get(h.ctx, key); err == nil {
			out[key] = it.Value
		} else if !errors.Is(err, store.ErrNotFound) {
			h.t.Fatal(err)
		}
		names, err := h.st.Children(h.ctx, key)
		if err != nil {
			h.t.Fatal(err)
		}
		for _, n := range names {
			walk(store.Join(key, n))
		}
	}
	walk(h.k.Instance)
	return out
}

// restore puts the instance back as the backup had it, in one commit (a
// restore is one step for the store's clients): keys written since are
// deleted, the others get their old values.
func (h *damageHarness) restore(b map[string][]byte) {
	h.t.Helper()
	var ops []store.Op
	for key := range h.backup() {
		if _, ok := b[key]; !ok {
			ops = append(ops, store.Delete(key))
		}
	}
	for key, v := range b {
		ops = append(ops, store.Put(key, v))
	}
	if err := h.st.Commit(h.ctx, ops...); err != nil {
		h.t.Fatal(err)
	}
}
