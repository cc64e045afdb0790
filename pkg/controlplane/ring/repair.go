package ring

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring/ringspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// RepairReport says what Repair found in the store and what it did.
type RepairReport struct {
	// Found lists the damage, one finding each; values read from the store
	// are quoted by a short prefix. Empty for a sound ring (a new leader
	// starting its incarnation).
	Found []string
	// From is the pair the store named, zero if its pointers were unusable.
	From Pair
	// Salvaged says where the table of the resync blob came from.
	Salvaged string
	// To is the resync published: a new incarnation.
	To Pair
	// Removed counts generation nodes and stray keys deleted.
	Removed int
}

func (r RepairReport) String() string {
	found := "ring sound"
	if len(r.Found) > 0 {
		found = "found: " + strings.Join(r.Found, "; ")
	}
	from := "no usable pair"
	if r.From != (Pair{}) {
		from = r.From.String()
	}
	return fmt.Sprintf("%s; store named %s; table from %s; published resync %v; removed %d stale or stray nodes", found, from, r.Salvaged, r.To, r.Removed)
}

// salvageTries bounds how many older blobs a repair tries when the latest
// is unreadable.
const salvageTries = 8

// Repair starts a new incarnation of an instance's ring: it takes the
// published state if it loads and is not older than known (the table the
// caller published last, nil if none), else known, else the newest
// readable blob and the deltas that follow it, else an empty table; it
// publishes that as a
// resync blob at a new incarnation above everything the store holds and
// above floor (the highest pair the caller knows of), moves both pointers
// to it in one commit and deletes every other generation and stray key.
// Muxes load the resync whole; agents take the new incarnation as a reset.
//
// A new controller calls it for every instance when elected, and the
// elected controller whenever the ring is damaged or differs from what it
// published. Only the instance's configuration must be readable.
//
// An incarnation read from the store more than MaxIncarnationLead ahead of
// opts.Now is damage: reported, neither loaded nor salvaged, never a floor.
// A resync that would lead the clock by more than that is refused
// (ErrIncarnationAhead) and nothing is written.
func Repair(ctx context.Context, st store.Store, k Keys, opts WriterOptions, floor Pair, known *forwarding.Table) (*Writer, RepairReport, error) {
	opts.fill(st)
	var r RepairReport
	cfg, err := ReadInstance(ctx, st, k)
	if err != nil {
		return nil, r, err
	}
	lim := instanceLimits(cfg.Buckets, st.MaxValueSize())
	note := func(format string, a ...any) {
		if f := fmt.Sprintf(format, a...); !slices.Contains(r.Found, f) {
			r.Found = append(r.Found, f)
		}
	}

	// The pointers, as they are.
	var genVersion int64
	now := opts.Now()
	high := floor // highest pair seen anywhere
	raise := func(p Pair) {
		if high.Less(p) {
			high = p
		}
	}
	// see takes a pair read from the store as a floor, unless its
	// incarnation is beyond the clock's bound: that is damage (a bit flip,
	// a forged write), and a floor taken from it would push every later
	// incarnation ahead, or wrap it (docs/control-plane.md, "Incarnation
	// rules").
	see := func(what string, p Pair) bool {
		if !incarnationTrusted(p.Incarnation, now, MaxIncarnationLead) {
			note("%s names incarnation %d, more than %v ahead of the clock (%d): damage, not a floor", what, p.Incarnation, MaxIncarnationLead, unixClock(now))
			return false
		}
		raise(p)
		return true
	}
	// What this controller published itself is what muxes may run: always
	// a floor.
	if known != nil {
		raise(Pair{known.Incarnation, known.Generation})
	}
	ptr, perr := readPointers(ctx, st, k)
	ptrTrusted := false
	if perr == nil {
		r.From = ptr.gen
		genVersion = ptr.genVersion
		ptrTrusted = see(k.LatestGen(), ptr.gen)
	} else {
		if !errors.Is(perr, ErrCorrupt) && !errors.Is(perr, store.ErrNotFound) {
			return nil, r, perr // store trouble: try again later
		}
		note("pointers: %v", perr)
		it, err := st.Get(ctx, k.LatestGen())
		switch {
		case err == nil:
			genVersion = it.Version
			if p, err := parsePointer(it.Value); err == nil {
				see(k.LatestGen(), p)
			}
		case !errors.Is(err, store.ErrNotFound):
			return nil, r, err
		}
		if it, err := st.Get(ctx, k.LatestBlob()); err == nil {
			if p, err := parsePointer(it.Value); err == nil {
				see(k.LatestBlob(), p)
			}
		}
	}

	// The generation nodes, and what does not belong.
	names, err := st.Children(ctx, k.Gens())
	if err != nil {
		return nil, r, err
	}
	var gens, stray []uint32
	var strayNames []string
	for _, n := range names {
		g, ok := parseGen(n)
		if !ok {
			strayNames = append(strayNames, n)
			continue
		}
		gens = append(gens, g)
		if high.Generation < g {
			high.Generation = g
		}
		if perr == nil && g > ptr.gen.Generation {
			stray = append(stray, g)
		}
	}
	if len(strayNames) > 0 {
		note("%d names under %s that are not generations (first %s)", len(strayNames), k.Gens(), Quote([]byte(strayNames[0])))
	}
	if len(stray) > 0 {
		note("generations %v above latest-gen %v (objects of an unpublished or rolled-back attempt)", stray, ptr.gen)
	}

	// The table: the published state if it loads whole.
	var t *forwarding.Table
	if perr == nil && ptrTrusted {
		var s LoadStats
		t, _, s, err = loadOnce(ctx, st, k, lim)
		switch {
		case err == nil && known != nil && ptr.gen.Less(Pair{known.Incarnation, known.Generation}):
			note("the store's state %v is older than %v, published before", ptr.gen, Pair{known.Incarnation, known.Generation})
			t = nil
		case err == nil:
			r.Salvaged = fmt.Sprintf("the published state %v (blob %d and %d deltas)", ptr.gen, s.Blob, s.Deltas)
		case errors.Is(err, ErrCorrupt) || errors.Is(err, errRaced):
			note("%v", err)
			t = nil
		default:
			return nil, r, err
		}
	}
	if t == nil && known != nil {
		t = known.Clone()
		r.Salvaged = fmt.Sprintf("the table this controller published last (%v)", Pair{known.Incarnation, known.Generation})
	}
	if t == nil {
		if t, err = salvage(ctx, st, k, lim, gens, ptr, perr == nil, now, &r); err != nil {
			return nil, r, err
		}
	}
	// Every source above is trusted: a pointer beyond the bound was not
	// loaded, salvage skips blobs beyond it, and known is our own.
	raise(Pair{t.Incarnation, t.Generation})

	// The resync: a new incarnation, a generation above all seen.
	inc, err := nextIncarnation(now, high.Incarnation)
	if err != nil {
		return nil, r, fmt.Errorf("ring: repair of %s: %w", k.Instance, err)
	}
	gen := high.Generation + 1
	if gen == 0 {
		gen = 1 // wrapped: the new incarnation keeps the pair unique
	}
	t.Incarnation, t.Generation = inc, gen
	r.To = Pair{inc, gen}
	raw, err := marshalBlob(t)
	if err != nil {
		return nil, r, err
	}
	if err := store.DeleteTree(ctx, st, k.Gen(gen)); err != nil {
		return nil, r, err
	}
	obj, err := encodeObject(meta{kind: KindBlob, incarnation: inc, generation: gen, resync: true}, raw, opts.Level)
	if err != nil {
		return nil, r, err
	}
	n, err := writeObject(ctx, st, k.objectDir(gen, KindBlob), obj, opts.ChunkSize)
	if err != nil {
		return nil, r, err
	}
	p := formatPointer(r.To)
	if err := st.Commit(ctx, store.IfVersion(k.LatestGen(), genVersion), store.Put(k.LatestGen(), p), store.Put(k.LatestBlob(), p)); err != nil {
		return nil, r, fmt.Errorf("ring: publish resync %v of %s: %w", r.To, k.Instance, err)
	}
	it, err := st.Get(ctx, k.LatestGen())
	if err != nil {
		return nil, r, err
	}
	w := &Writer{st: st, k: k, opts: opts, table: t, blobBytes: n,
		ptr: pointers{gen: r.To, blob: r.To, genVersion: it.Version}}
	r.Removed, err = w.clean(ctx)
	if err != nil {
		return w, r, fmt.Errorf("%w: %v", ErrGC, err)
	}
	return w, r, nil
}

// salvage finds the newest readable blob and applies the deltas of its
// incarnation that follow it and read and apply cleanly, or returns an
// empty table. With a sound latest-gen it looks at and below it first
// (deltas up to it); then above it: objects above the pointer are either a
// failed attempt or a state rolled back by a restore, which muxes may run.
func salvage(ctx context.Context, st store.Store, k Keys, lim limits, gens []uint32, ptr pointers, ptrOK bool, now time.Time, r *RepairReport) (*forwarding.Table, error) {
	desc := slices.Clone(gens)
	slices.Sort(desc)
	slices.Reverse(desc)
	tries := 0
	for _, above := range []bool{false, true} {
		for _, g := range desc {
			if tries == salvageTries {
				break
			}
			if ptrOK && (g > ptr.gen.Generation) != above {
				continue
			}
			if !ptrOK && above {
				break // the first pass saw everything
			}
			t, m, _, err := readBlob(ctx, st, k, Pair{Generation: g}, lim)
			if errors.Is(err, store.ErrNotFound) {
				continue // a delta-only generation
			}
			tries++
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					return nil, err
				}
				r.Found = append(r.Found, err.Error())
				continue
			}
			if !incarnationTrusted(m.incarnation, now, MaxIncarnationLead) {
				r.Found = append(r.Found, fmt.Sprintf("blob %d names incarnation %d, more than %v ahead of the clock: damage, not salvaged", g, m.incarnation, MaxIncarnationLead))
				continue
			}
			deltas := 0
			for d := g + 1; d != 0 && (above || !ptrOK || d <= ptr.gen.Generation); d++ {
				delta, _, err := readDelta(ctx, st, k, Pair{m.incarnation, d}, lim)
				if err == nil {
					err = t.Apply(delta)
				}
				if err != nil {
					break
				}
				deltas++
			}
			r.Salvaged = fmt.Sprintf("blob %d of incarnation %d and the %d deltas after it that read", g, m.incarnation, deltas)
			return t, nil
		}
	}
	in, err := ReadInstance(ctx, st, k)
	if err != nil {
		return nil, err
	}
	r.Salvaged = "nothing readable: an empty table (every bucket is assigned again)"
	return forwarding.NewTable(int(in.Buckets)), nil
}

// clean deletes every generation node other than those from the latest
// blob to latest-gen, names under gen/ that are not generations, and keys
// of the ring other than the pointers and gen/.
func (w *Writer) clean(ctx context.Context) (int, error) {
	n := 0
	names, err := w.st.Children(ctx, w.k.Ring())
	if err != nil {
		return 0, err
	}
	for _, name := range names {
		switch name {
		case "latest-gen", "latest-blob", "gen":
			continue
		}
		if err := store.DeleteTree(ctx, w.st, w.k.Ring()+"/"+name); err != nil {
			return n, err
		}
		n++
	}
	if names, err = w.st.Children(ctx, w.k.Gens()); err != nil {
		return n, err
	}
	for _, name := range names {
		g, ok := parseGen(name)
		if ok && g >= w.ptr.blob.Generation && g <= w.ptr.gen.Generation {
			continue
		}
		if err := store.DeleteTree(ctx, w.st, w.k.Gens()+"/"+name); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// ErrDiverged: the ring in the store is not what this writer published.
var ErrDiverged = errors.New("ring: the store differs from what the controller published")

// Verify checks that the store still holds what this writer published:
// both pointers unchanged (same value, same version), and with full, that
// the ring loads as a mux would load it into the writer's table. A store
// error is returned as is; anything else wraps ErrDiverged (or ErrCorrupt)
// and calls for Repair.
func (w *Writer) Verify(ctx context.Context, full bool) error {
	for _, c := range []struct {
		key     string
		want    Pair
		version int64
	}{{w.k.LatestGen(), w.ptr.gen, w.ptr.genVersion}, {w.k.LatestBlob(), w.ptr.blob, 0}} {
		it, err := w.st.Get(ctx, c.key)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %s is missing (published %v)", ErrDiverged, c.key, c.want)
		}
		if err != nil {
			return err
		}
		if p, perr := parsePointer(it.Value); perr != nil || p != c.want || (c.version != 0 && it.Version != c.version) {
			return fmt.Errorf("%w: %s is %s (published %v)", ErrDiverged, c.key, Quote(it.Value), c.want)
		}
	}
	if !full {
		return nil
	}
	names, err := w.st.Children(ctx, w.k.Gens())
	if err != nil {
		return err
	}
	for _, n := range names {
		if g, ok := parseGen(n); !ok || g > w.ptr.gen.Generation {
			return fmt.Errorf("%w: %s under %s, above latest-gen %v", ErrDiverged, Quote([]byte(n)), w.k.Gens(), w.ptr.gen)
		}
	}
	t, _, _, err := load(ctx, w.st, w.k)
	if err != nil {
		if errors.Is(err, ErrCorrupt) || errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %v", ErrDiverged, err)
		}
		return err
	}
	if !sameTable(t, w.table) {
		return fmt.Errorf("%w: the ring at %v loads into another table than the one published", ErrDiverged, w.ptr.gen)
	}
	return nil
}

// sameTable compares what the payload carries, the strategies' sections
// that can compare their state (ringspi.Comparer) included.
func sameTable(a, b *forwarding.Table) bool {
	if a.Incarnation != b.Incarnation || a.Generation != b.Generation ||
		!slices.Equal(a.Buckets, b.Buckets) || !maps.Equal(a.Servers, b.Servers) {
		return false
	}
	secs, err := sections()
	if err != nil {
		return false // nothing was loaded to compare: the payload cannot be read
	}
	for _, s := range secs {
		if c, ok := s.Section.(ringspi.Comparer); ok && !c.Same(a, b) {
			return false
		}
	}
	return true
}
