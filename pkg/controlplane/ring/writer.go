package ring

import (
	"compress/zlib"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// WriterOptions tune when blobs are written.
type WriterOptions struct {
	// BlobEvery: a blob is written at least every BlobEvery generations
	// (0 = 64), and earlier when the deltas since the last blob add up to
	// more bytes than that blob — past that point a cold start reads less
	// from a fresh blob.
	BlobEvery uint32
	// ChunkSize bounds each stored chunk; 0 = the store's MaxValueSize.
	ChunkSize int
	// Level is the zlib level; 0 = zlib.BestSpeed (see docs/control-plane.md
	// for the measurements behind this default).
	Level int
	// Now is the clock incarnations are taken from (default time.Now).
	Now func() time.Time
}

func (o *WriterOptions) fill(st store.Store) {
	if o.BlobEvery == 0 {
		o.BlobEvery = 64
	}
	if o.ChunkSize == 0 {
		o.ChunkSize = st.MaxValueSize()
	}
	if o.Level == 0 {
		o.Level = zlib.BestSpeed
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Writer publishes generations of one instance's mux ring. It is used by
// the (single, elected) controller, through a fenced store.
type Writer struct {
	st   store.Store
	k    Keys
	opts WriterOptions

	table      *forwarding.Table
	ptr        pointers
	blobBytes  int // size of the latest blob
	deltaBytes int // size of the deltas after it
	broken     error
}

// ErrExists is returned by Create for an instance that already exists.
var ErrExists = errors.New("ring: instance already exists")

// ErrGC wraps garbage-collection failures reported after a successful
// publication: the generation is published, old ones are left for later.
var ErrGC = errors.New("ring: garbage collection failed")

// Create writes a new instance: its configuration and generation 0 of a
// new incarnation, a resync blob of B unowned buckets. The configuration and both pointers appear in one
// commit, after the blob, so the instance becomes visible complete or not
// at all; leftovers of an earlier failed Create are overwritten.
func Create(ctx context.Context, st store.Store, k Keys, in *forwarding.Instance, opts WriterOptions) (*Writer, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	opts.fill(st)
	if _, err := st.Get(ctx, k.Config()); err == nil {
		return nil, fmt.Errorf("%w: %s", ErrExists, in.Name)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	cfg, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	t := forwarding.NewTable(int(in.Buckets))
	// Incarnation from the clock: a re-created instance (generations from
	// 0 again) still starts above anything muxes and agents remember.
	if t.Incarnation, err = nextIncarnation(opts.Now(), 0); err != nil {
		return nil, err
	}
	raw, err := marshalBlob(t) // before anything is deleted
	if err != nil {
		return nil, err
	}
	if err := store.DeleteTree(ctx, st, k.Ring()); err != nil {
		return nil, err
	}
	obj, err := encodeObject(meta{kind: KindBlob, incarnation: t.Incarnation, resync: true}, raw, opts.Level)
	if err != nil {
		return nil, err
	}
	if _, err := writeObject(ctx, st, k.objectDir(0, KindBlob), obj, opts.ChunkSize); err != nil {
		return nil, err
	}
	p := formatPointer(Pair{Incarnation: t.Incarnation})
	err = st.Commit(ctx,
		store.IfAbsent(k.Config()),
		store.Put(k.LatestBlob(), p),
		store.Put(k.LatestGen(), p),
		store.Put(k.Config(), cfg))
	if errors.Is(err, store.ErrConflict) {
		return nil, fmt.Errorf("%w: %s", ErrExists, in.Name)
	}
	if err != nil {
		return nil, err
	}
	return Open(ctx, st, k, opts)
}

// Open loads the current state of an existing ring, exactly as a mux
// would, so the writer continues from what is really published: after a
// controller crash, a half-written generation above latest-gen is ignored
// here and overwritten by the next Publish. A damaged ring is an error
// (ErrCorrupt, or ErrNotFound for a missing pointer): Repair it.
func Open(ctx context.Context, st store.Store, k Keys, opts WriterOptions) (*Writer, error) {
	opts.fill(st)
	t, p, s, err := load(ctx, st, k)
	if err != nil {
		return nil, err
	}
	return &Writer{st: st, k: k, opts: opts, table: t, ptr: p, blobBytes: s.BlobBytes, deltaBytes: s.DeltaBytes}, nil
}

// Pair is the published pair: incarnation and generation.
func (w *Writer) Pair() Pair { return w.ptr.gen }

// Table is the published table. It is the writer's own: read it, never
// modify it (copying 6.4 M buckets per operation would cost more than the
// operation).
func (w *Writer) Table() *forwarding.Table { return w.table }

// LatestBlob is the generation of the newest blob.
func (w *Writer) LatestBlob() uint32 { return w.ptr.blob.Generation }

// PublishStats describes one publication.
type PublishStats struct {
	Generation uint32
	DeltaBytes int // stored bytes of the delta
	BlobBytes  int // stored bytes of the blob, 0 if none was written
	Collected  int // generations garbage-collected
}

// Publish makes d the next generation: d.Generation must be
// Table().Generation+1 and d must apply to Table(). The delta (and a blob
// when one is due) are written first; latest-gen moves last, in one commit
// conditional on nobody else having moved it. Once a blob is published,
// generations older than it are deleted.
//
// After an error other than ErrGC the writer refuses further work: the
// store may or may not hold the generation (a timeout can hide a commit),
// so the caller must Open a new Writer, which reads what is really there.
func (w *Writer) Publish(ctx context.Context, d *forwarding.Delta) (PublishStats, error) {
	var ps PublishStats
	if w.broken != nil {
		return ps, fmt.Errorf("ring: writer unusable after an earlier failure, reopen it: %w", w.broken)
	}
	if err := w.table.Check(d); err != nil {
		return ps, err
	}
	if d.Generation == 0 {
		// 2^32 generations in one incarnation: the pair would go back.
		return ps, fmt.Errorf("ring: generation counter of %s wrapped; Repair starts a new incarnation", w.k.Instance)
	}
	ps, err := w.publish(ctx, d)
	if err != nil && !errors.Is(err, ErrGC) {
		w.broken = err
	}
	return ps, err
}

func (w *Writer) publish(ctx context.Context, d *forwarding.Delta) (PublishStats, error) {
	ps := PublishStats{Generation: d.Generation}
	gen := d.Generation
	raw, err := marshalDelta(d)
	if err != nil {
		return ps, err
	}
	// A crashed predecessor may have left part of this generation behind.
	if err := store.DeleteTree(ctx, w.st, w.k.Gen(gen)); err != nil {
		return ps, err
	}
	inc := w.table.Incarnation
	obj, err := encodeObject(meta{kind: KindDelta, incarnation: inc, generation: gen}, raw, w.opts.Level)
	if err != nil {
		return ps, err
	}
	if ps.DeltaBytes, err = writeObject(ctx, w.st, w.k.objectDir(gen, KindDelta), obj, w.opts.ChunkSize); err != nil {
		return ps, err
	}
	next := w.table
	blobDue := gen-w.ptr.blob.Generation >= w.opts.BlobEvery || w.deltaBytes+ps.DeltaBytes > w.blobBytes
	if blobDue {
		next = w.table.Clone()
		next.ApplyChecked(d) // Publish checked d
		raw, err := marshalBlob(next)
		if err != nil {
			return ps, err
		}
		obj, err := encodeObject(meta{kind: KindBlob, incarnation: inc, generation: gen}, raw, w.opts.Level)
		if err != nil {
			return ps, err
		}
		if ps.BlobBytes, err = writeObject(ctx, w.st, w.k.objectDir(gen, KindBlob), obj, w.opts.ChunkSize); err != nil {
			return ps, err
		}
	}
	blob := w.ptr.blob
	if blobDue {
		blob = Pair{inc, gen}
	}
	if err := w.st.Commit(ctx, w.pointerOps(Pair{inc, gen}, blob)...); err != nil {
		return ps, fmt.Errorf("ring: move latest-gen of %s to %d: %w", w.k.Instance, gen, err)
	}
	// Published. Bring the in-memory state along; re-read the versions the
	// next conditional commit needs.
	if blobDue {
		w.table = next
		w.ptr.blob = blob
		w.blobBytes, w.deltaBytes = ps.BlobBytes, 0
	} else {
		w.table.ApplyChecked(d) // Publish checked d
		w.deltaBytes += ps.DeltaBytes
	}
	w.ptr.gen = Pair{inc, gen}
	it, err := w.st.Get(ctx, w.k.LatestGen())
	if err != nil {
		return ps, err
	}
	w.ptr.genVersion = it.Version
	if blobDue {
		ps.Collected, err = w.GC(ctx)
		if err != nil {
			return ps, fmt.Errorf("%w: %v", ErrGC, err)
		}
	}
	return ps, nil
}

// GC deletes the generations older than the latest blob (§4.5 invariant c:
// no mux needs them — a mux that was still reading them starts over from
// the latest blob), generations above latest-gen (left by a failed
// attempt) and stray keys. It returns how many nodes it deleted.
func (w *Writer) GC(ctx context.Context) (int, error) { return w.clean(ctx) }

// pointerOps moves both pointers, on condition that latest-gen is still
// where this writer last saw it.
func (w *Writer) pointerOps(gen, blob Pair) []store.Op {
	ops := []store.Op{store.IfVersion(w.k.LatestGen(), w.ptr.genVersion), store.Put(w.k.LatestGen(), formatPointer(gen))}
	if blob != w.ptr.blob {
		ops = append(ops, store.Put(w.k.LatestBlob(), formatPointer(blob)))
	}
	return ops
}
