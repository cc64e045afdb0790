package ring

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestFollowerNeverGoesBack: the store's pointer moved back (a restored
// backup whose older objects are all present) is refused — the data plane
// keeps the newer table, each lower pair is reported once and counted —
// and a repair at a new incarnation is loaded whole (Replace, never a
// delta), declared as a resync; the deltas after it apply as usual.
func TestFollowerNeverGoesBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 21))
	ctx := storetest.Context(t)
	k, w := newRing(t, 400, WriterOptions{BlobEvery: 1 << 20})
	for range 3 {
		publish(t, w, rng)
	}
	type refusal struct{ running, store Pair }
	var refusals []refusal
	var resyncs []Resync
	f := NewFollower(shared, k, FollowerOptions{
		OnRefuse: func(r, s Pair) { refusals = append(refusals, refusal{r, s}) },
		OnResync: func(r Resync) { resyncs = append(resyncs, r) }})
	tab, _, err := f.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{table: tab.Clone()}
	newest := tab.Clone()
	inc := w.Pair().Incarnation
	for _, back := range []uint32{2, 2, 1, 1} {
		p := formatPointer(Pair{inc, back})
		if err := shared.Commit(ctx, store.Put(k.LatestGen(), p), store.Put(k.LatestBlob(), p)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.CatchUp(ctx, r); err != nil {
			t.Fatalf("refusing %d: %v", back, err)
		}
		if !reflect.DeepEqual(r.table, newest) || r.replaces+r.deltas != 0 {
			t.Fatalf("follower went back to generation %d", back)
		}
	}
	want := []refusal{{Pair{inc, 3}, Pair{inc, 2}}, {Pair{inc, 3}, Pair{inc, 1}}}
	if !reflect.DeepEqual(refusals, want) || f.Status().Refused != 2 {
		t.Fatalf("refusals %v (status %d), want each lower pair once: %v", refusals, f.Status().Refused, want)
	}

	// The controller repairs: a new incarnation, loaded whole.
	w2, rep, err := Repair(ctx, shared, k, WriterOptions{BlobEvery: 1 << 20}, w.Pair(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !w.Pair().Less(w2.Pair()) || w2.Pair().Incarnation <= inc {
		t.Fatalf("repair published %v after %v", w2.Pair(), w.Pair())
	}
	t.Logf("repair: %v", rep)
	salvaged := w2.Table().Clone()
	salvaged.Incarnation, salvaged.Generation = newest.Incarnation, newest.Generation
	if !reflect.DeepEqual(salvaged, newest) {
		t.Fatal("repair did not take the rolled-back state muxes run (objects above the pointer)")
	}
	if _, err := f.CatchUp(ctx, r); err != nil {
		t.Fatal(err)
	}
	if r.replaces != 1 || r.deltas != 0 || len(resyncs) != 1 || !resyncs[0].Declared || resyncs[0].To != w2.Pair() {
		t.Fatalf("new incarnation: %d replaces, %d deltas, resyncs %+v", r.replaces, r.deltas, resyncs)
	}
	if !reflect.DeepEqual(r.table, w2.Table()) {
		t.Fatal("follower's table differs from the resync")
	}
	publish(t, w2, rng)
	if _, err := f.CatchUp(ctx, r); err != nil {
		t.Fatal(err)
	}
	if r.deltas != 1 || !reflect.DeepEqual(r.table, w2.Table()) {
		t.Fatalf("delta after the resync: %d deltas", r.deltas)
	}
	// The old writer is fenced off by the pointer's version.
	if _, err := w.Publish(ctx, nextDelta(rng, w.Table())); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("old incarnation's writer published: %v", err)
	}
}

// TestDeltaOfAnotherIncarnationRefused: a delta object whose header names
// another incarnation than the pointer (an orphan of an earlier
// incarnation under a forged pointer) is corrupt, never applied.
func TestDeltaOfAnotherIncarnationRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 22))
	ctx := storetest.Context(t)
	k, w := newRing(t, 300, WriterOptions{BlobEvery: 1 << 20})
	publish(t, w, rng)
	f, r := startFollower(t, k, FollowerOptions{Poll: 50 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	good := w.Table().Clone()
	d := nextDelta(rng, good)
	obj, err := encodeObject(meta{kind: KindDelta, incarnation: w.Pair().Incarnation - 1, generation: d.Generation}, deltaBytes(d), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writeObject(ctx, shared, k.objectDir(d.Generation, KindDelta), obj, 1<<20); err != nil {
		t.Fatal(err)
	}
	if err := shared.Commit(ctx, store.Put(k.LatestGen(), formatPointer(Pair{w.Pair().Incarnation, d.Generation}))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to report the delta", func() bool { return f.Status().Errors > 0 })
	if err := f.Status().LastError; !errors.Is(err, ErrCorrupt) {
		t.Fatalf("last error %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !reflect.DeepEqual(r.table, good) {
		t.Fatal("a delta of another incarnation was applied")
	}
}

// TestRepairSalvages: with the latest blob unreadable and the pointers
// gone, Repair takes the newest readable blob and the deltas after it,
// removes every other node, and reports what it found.
func TestRepairSalvages(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 23))
	ctx := storetest.Context(t)
	k, w := newRing(t, 300, WriterOptions{BlobEvery: 1 << 20})
	for range 3 {
		publish(t, w, rng)
	}
	want := w.Table().Clone()
	// Damage: no pointers, and a stray key under gen/.
	if err := shared.Commit(ctx, store.Delete(k.LatestGen()), store.Delete(k.LatestBlob()), store.Put(k.Gens()+"/junk", []byte("x"))); err != nil {
		t.Fatal(err)
	}
	w2, rep, err := Repair(ctx, shared, k, WriterOptions{}, Pair{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%v", rep)
	if len(rep.Found) < 2 || w2.Pair().Generation != 4 {
		t.Fatalf("report %+v, pair %v", rep, w2.Pair())
	}
	got := w2.Table().Clone()
	got.Incarnation, got.Generation = want.Incarnation, want.Generation
	if !reflect.DeepEqual(got, want) {
		t.Fatal("salvaged table differs from the last published one")
	}
	names, _ := shared.Children(ctx, k.Gens())
	if !reflect.DeepEqual(names, []string{"0000000004"}) {
		t.Fatalf("left after repair: %v", names)
	}
	tab, s, err := NewFollower(shared, k, FollowerOptions{}).Load(ctx)
	if err != nil || !s.Resync || !reflect.DeepEqual(tab, w2.Table()) {
		t.Fatalf("load after repair: %+v, %v", s, err)
	}
}
