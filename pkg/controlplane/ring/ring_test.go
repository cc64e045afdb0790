package ring

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

var shared store.Store

func TestMain(m *testing.M) { os.Exit(storetest.MainWithEmbedded(m, &shared)) }

func testInstance(name string, buckets uint32) *forwarding.Instance {
	return &forwarding.Instance{Name: name, Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("192.0.2.1")},
		PortLow: 80, PortHigh: 80, Buckets: buckets, ChainWindow: forwarding.DefaultChainWindow}
}

var instanceSeq struct {
	sync.Mutex
	n int
}

// newRing creates a fresh instance under its own root.
func newRing(t *testing.T, buckets uint32, opts WriterOptions) (Keys, *Writer) {
	t.Helper()
	instanceSeq.Lock()
	instanceSeq.n++
	root := fmt.Sprintf("/ringtest%d", instanceSeq.n)
	instanceSeq.Unlock()
	k := InstanceKeys(root, "web")
	w, err := Create(storetest.Context(t), shared, k, testInstance("web", buckets), opts)
	if err != nil {
		t.Fatal(err)
	}
	return k, w
}

// nextDelta adds a server and moves a random share of buckets to it, or
// retires one, so the table stays valid.
func nextDelta(rng *rand.Rand, tab *forwarding.Table) *forwarding.Delta {
	d := &forwarding.Delta{Generation: tab.Generation + 1}
	id := forwarding.ServerID(1025 + len(tab.Servers))
	d.Servers = []forwarding.ServerChange{{ID: id, Server: forwarding.Server{Addr: netip.AddrFrom4([4]byte{10, 1, byte(id >> 8), byte(id)}), State: forwarding.Active}}}
	for i, b := range tab.Buckets {
		if b.Current == forwarding.NoServer || rng.IntN(len(tab.Servers)+1) == 0 {
			prev := b.Current
			d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Current: id, History: forwarding.Chain{prev}, Changed: uint32(1000 + d.Generation)}})
		}
	}
	return d
}

func publish(t *testing.T, w *Writer, rng *rand.Rand) PublishStats {
	t.Helper()
	ps, err := w.Publish(storetest.Context(t), nextDelta(rng, w.Table()))
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestPublishAndLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	k, w := newRing(t, 5000, WriterOptions{ChunkSize: 2048, BlobEvery: 4})
	f := NewFollower(shared, k, FollowerOptions{})
	ctx := storetest.Context(t)
	blobs := 0
	for range 10 {
		ps := publish(t, w, rng)
		if ps.BlobBytes > 0 {
			blobs++
		}
		got, st, err := f.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, w.Table()) {
			t.Fatalf("generation %d: cold start differs from the writer's table", ps.Generation)
		}
		if st.Blob != w.LatestBlob() || st.Deltas != int(ps.Generation-w.LatestBlob()) {
			t.Fatalf("load stats %+v, latest blob %d", st, w.LatestBlob())
		}
	}
	if blobs < 2 {
		t.Fatalf("only %d blobs in 10 generations with BlobEvery 4", blobs)
	}
	// Generations older than the latest blob are gone, newer ones remain.
	names, _ := shared.Children(ctx, k.Gens())
	for _, n := range names {
		g, _ := parseGen(n)
		if g < w.LatestBlob() {
			t.Errorf("generation %d survived garbage collection (latest blob %d)", g, w.LatestBlob())
		}
	}
	if len(names) != int(w.Table().Generation-w.LatestBlob())+1 {
		t.Errorf("generations kept: %v", names)
	}
	// A reopened writer (a restarted controller) continues from the store.
	w2, err := Open(ctx, shared, k, WriterOptions{ChunkSize: 2048, BlobEvery: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(w2.Table(), w.Table()) {
		t.Fatal("reopened writer sees another table")
	}
	publish(t, w2, rng)
	if _, err := w.Publish(ctx, nextDelta(rng, w.Table())); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale writer published: %v", err)
	}
}

func TestCreateTwice(t *testing.T) {
	k, _ := newRing(t, 10, WriterOptions{})
	root := k.Instance[:len(k.Instance)-len("/instances/web")]
	_, err := Create(storetest.Context(t), shared, k, testInstance("web", 10), WriterOptions{})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second Create: %v", err)
	}
	in, err := ReadInstance(storetest.Context(t), shared, InstanceKeys(root, "web"))
	if err != nil || in.Buckets != 10 {
		t.Fatalf("ReadInstance: %+v, %v", in, err)
	}
	if err := Delete(storetest.Context(t), shared, k); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadInstance(storetest.Context(t), shared, k); !errors.Is(err, ErrNoInstance) {
		t.Fatalf("after Delete: %v", err)
	}
	if names, _ := shared.Children(storetest.Context(t), k.Instance); len(names) != 0 {
		t.Fatalf("left after Delete: %v", names)
	}
}

// recorder is an Applier keeping its own table, as a mux data plane would.
type recorder struct {
	mu       sync.Mutex
	table    *forwarding.Table
	deltas   int
	replaces int
	fail     error
}

func (r *recorder) ApplyDelta(d *forwarding.Delta) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.deltas++
	return r.table.Apply(d)
}

func (r *recorder) Replace(t *forwarding.Table) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.replaces++
	r.table = t
	return nil
}

func (r *recorder) generation() uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.table.Generation
}

// waitFor polls cond for up to 15 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startFollower(t *testing.T, k Keys, opts FollowerOptions) (*Follower, *recorder) {
	t.Helper()
	f := NewFollower(shared, k, opts)
	tab, _, err := f.Load(storetest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{table: tab.Clone()}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { f.Run(ctx, tab, r); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return f, r
}

func TestFollowLive(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	k, w := newRing(t, 3000, WriterOptions{ChunkSize: 4096, BlobEvery: 1000})
	_, r := startFollower(t, k, FollowerOptions{Poll: time.Hour}) // the watch alone must do
	for range 5 {
		publish(t, w, rng)
		gen := w.Table().Generation
		waitFor(t, fmt.Sprintf("generation %d", gen), func() bool { return r.generation() == gen })
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !reflect.DeepEqual(r.table, w.Table()) {
		t.Fatal("follower's table differs from the writer's")
	}
}

func TestFollowerFallsBehindGC(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	k, w := newRing(t, 2000, WriterOptions{BlobEvery: 3})
	f, r := startFollower(t, k, FollowerOptions{Poll: time.Hour})
	r.mu.Lock()
	r.fail = errors.New("data plane busy")
	r.mu.Unlock()
	for range 7 { // past two blobs: the follower's next delta is collected
		publish(t, w, rng)
	}
	waitFor(t, "an error report", func() bool { return f.Status().Errors > 0 })
	r.mu.Lock()
	r.fail = nil
	r.mu.Unlock()
	gen := w.Table().Generation
	waitFor(t, "catch-up", func() bool { return r.generation() == gen })
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.replaces == 0 {
		t.Fatal("caught up past garbage collection without a full replacement")
	}
	if !reflect.DeepEqual(r.table, w.Table()) {
		t.Fatal("tables differ")
	}
}

// corruptChunk overwrites one byte of a stored chunk.
func corruptChunk(t *testing.T, key string, at int) {
	t.Helper()
	it, err := shared.Get(storetest.Context(t), key)
	if err != nil {
		t.Fatal(err)
	}
	v := append([]byte(nil), it.Value...)
	v[at%len(v)] ^= 0x40
	if err := shared.Commit(storetest.Context(t), store.Put(key, v)); err != nil {
		t.Fatal(err)
	}
}

// TestCorruptDeltaNotApplied: a mux keeps forwarding on its last good
// generation when the next delta is damaged, reports it, and moves on once
// a good blob covers it.
func TestCorruptDeltaNotApplied(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 10))
	k, w := newRing(t, 4000, WriterOptions{ChunkSize: 1024, BlobEvery: 1000})
	publish(t, w, rng)
	var mu sync.Mutex
	var reported []error
	f, r := startFollower(t, k, FollowerOptions{Poll: 50 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		OnError: func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }})
	good := w.Table().Clone()
	waitFor(t, "first generation", func() bool { return r.generation() == good.Generation })

	// Publish the next generation as the controller would, but with a
	// damaged second chunk of its delta.
	d := nextDelta(rng, w.Table())
	obj, err := encodeObject(meta{kind: KindDelta, incarnation: w.Pair().Incarnation, generation: d.Generation}, deltaBytes(d), 1)
	if err != nil {
		t.Fatal(err)
	}
	chunks := split(obj, 1024)
	if len(chunks) < 2 {
		t.Fatalf("delta fits in %d chunk", len(chunks))
	}
	chunks[1][100] ^= 0x40
	for i, c := range chunks {
		if err := shared.Commit(storetest.Context(t), store.Put(chunkKey(k.objectDir(d.Generation, KindDelta), i), c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := shared.Commit(storetest.Context(t), store.Put(k.LatestGen(), formatPointer(Pair{w.Pair().Incarnation, d.Generation}))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a corruption report", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(reported) > 0 && errors.Is(reported[len(reported)-1], ErrCorrupt)
	})
	r.mu.Lock()
	if !reflect.DeepEqual(r.table, good) || r.deltas != 0 {
		t.Fatalf("data plane changed by a corrupt delta (deltas applied %d)", r.deltas)
	}
	r.mu.Unlock()
	if f.Status().Generation != good.Generation || f.Status().LastError == nil {
		t.Fatalf("status %+v", f.Status())
	}
	// The controller publishes a blob at the next generation: the follower
	// skips the damaged delta by way of it.
	if _, err := Open(storetest.Context(t), shared, k, WriterOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("writer opened over a corrupt delta: %v", err)
	}
	fixed := good.Clone()
	if err := fixed.Apply(d); err != nil {
		t.Fatal(err)
	}
	writeBlobFor(t, k, fixed, d.Generation)
	waitFor(t, "recovery through the blob", func() bool { return r.generation() == d.Generation })
	r.mu.Lock()
	defer r.mu.Unlock()
	if !reflect.DeepEqual(r.table, fixed) {
		t.Fatal("table after recovery differs")
	}
}

// writeBlobFor stores a blob for generation g and points latest-blob at it,
// the repair an operator (or a controller that still has the table) makes.
func writeBlobFor(t *testing.T, k Keys, tab *forwarding.Table, g uint32) {
	t.Helper()
	obj, err := encodeObject(meta{kind: KindBlob, incarnation: tab.Incarnation, generation: g}, blobBytes(tab), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeObject(storetest.Context(t), shared, k.objectDir(g, KindBlob), obj, 1024); err != nil {
		t.Fatal(err)
	}
	if err := shared.Commit(storetest.Context(t), store.Put(k.LatestBlob(), formatPointer(Pair{tab.Incarnation, g}))); err != nil {
		t.Fatal(err)
	}
}

func TestCorruptAtColdStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	k, w := newRing(t, 4000, WriterOptions{ChunkSize: 1024, BlobEvery: 2})
	publish(t, w, rng)
	publish(t, w, rng)
	publish(t, w, rng)
	f := NewFollower(shared, k, FollowerOptions{})
	ctx := storetest.Context(t)
	blobDir := k.objectDir(w.LatestBlob(), KindBlob)
	deltaDir := k.objectDir(w.Table().Generation, KindDelta)
	cases := []struct {
		name   string
		damage func()
		undo   func()
	}{
		{"blob chunk 0 bit flip", func() { corruptChunk(t, chunkKey(blobDir, 0), 40) }, func() { corruptChunk(t, chunkKey(blobDir, 0), 40) }},
		{"blob last chunk missing", nil, nil},
		{"delta header bit flip", func() { corruptChunk(t, chunkKey(deltaDir, 0), 9) }, func() { corruptChunk(t, chunkKey(deltaDir, 0), 9) }},
	}
	for _, c := range cases {
		if c.damage == nil {
			names, _ := shared.Children(ctx, blobDir)
			last := blobDir + "/" + names[len(names)-1]
			saved, _ := shared.Get(ctx, last)
			c.damage = func() { shared.Commit(ctx, store.Delete(last)) }
			c.undo = func() { shared.Commit(ctx, store.Put(last, saved.Value)) }
		}
		c.damage()
		if _, _, err := f.Load(ctx); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Load gave %v, want ErrCorrupt", c.name, err)
		}
		c.undo()
		if _, _, err := f.Load(ctx); err != nil {
			t.Fatalf("%s: Load after repair: %v", c.name, err)
		}
	}
}

// TestPublishCrash kills the writer after every possible number of
// commits: the published generation is always a complete one, and a
// reopened writer finishes the job.
func TestPublishCrash(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	k, w := newRing(t, 3000, WriterOptions{ChunkSize: 1024, BlobEvery: 2})
	publish(t, w, rng)
	ctx := storetest.Context(t)
	opts := WriterOptions{ChunkSize: 1024, BlobEvery: 2}
	for budget := 0; ; budget++ {
		if budget > 200 {
			t.Fatal("publication never completed")
		}
		before, err := Open(ctx, shared, k, opts)
		if err != nil {
			t.Fatal(err)
		}
		d := nextDelta(rng, before.Table())
		crash := storetest.NewCrashing(shared, budget)
		cw, err := Open(ctx, crash, k, opts)
		if err != nil {
			t.Fatal(err)
		}
		_, perr := cw.Publish(ctx, d)
		after, err := Open(ctx, shared, k, opts)
		if err != nil {
			t.Fatalf("budget %d: store unreadable after the crash: %v", budget, err)
		}
		switch after.Table().Generation {
		case d.Generation:
			if !crash.Crashed() && perr != nil {
				t.Fatalf("budget %d: %v", budget, perr)
			}
			if !crash.Crashed() {
				t.Logf("publication completes with %d commits", budget)
				return
			}
		case before.Table().Generation:
			if !reflect.DeepEqual(after.Table(), before.Table()) {
				t.Fatalf("budget %d: table changed without a new generation", budget)
			}
			if _, err := after.Publish(ctx, d); err != nil {
				t.Fatalf("budget %d: publish after the crash: %v", budget, err)
			}
		default:
			t.Fatalf("budget %d: generation %d after crash", budget, after.Table().Generation)
		}
	}
}
