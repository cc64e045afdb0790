package ring

import (
	"context"
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// writeObject stores an encoded object under dir, one chunk per commit
// (ZooKeeper bounds a whole multi-op by its 1 MB request limit, so chunks
// cannot share one). It returns the number of bytes written.
func writeObject(ctx context.Context, st store.Store, dir string, obj []byte, chunkSize int) (int, error) {
	for i, c := range split(obj, chunkSize) {
		if err := st.Commit(ctx, store.Put(chunkKey(dir, i), c)); err != nil {
			return 0, err
		}
	}
	return len(obj), nil
}

// readObject reads and verifies the object under dir: of this kind and
// generation, sized within lim. It returns the raw payload and what the
// header says (the caller checks the incarnation). A missing chunk 0 is
// ErrNotFound (the generation was deleted or never written); everything
// else wrong is ErrCorrupt. Nothing is allocated for a size the header
// claims before that size is checked against lim.
func readObject(ctx context.Context, st store.Store, dir string, kind Kind, gen uint32, lim limits) (raw []byte, m meta, size int, err error) {
	first, err := st.Get(ctx, chunkKey(dir, 0))
	if err != nil {
		return nil, m, 0, err
	}
	if len(first.Value) > lim.chunk {
		return nil, m, 0, fmt.Errorf("%s: %w: chunk of %d bytes, larger than the store's values", dir, ErrCorrupt, len(first.Value))
	}
	h, err := parseHeader(first.Value)
	if err != nil {
		return nil, m, 0, fmt.Errorf("%s: %w", dir, err)
	}
	if h.kind != kind || h.generation != gen {
		return nil, m, 0, fmt.Errorf("%s: %w: header says %v", dir, ErrCorrupt, h.meta)
	}
	if err := lim.check(h); err != nil {
		return nil, m, 0, fmt.Errorf("%s: %w", dir, err)
	}
	if uint64(h.payloadLen)+HeaderSize < uint64(len(first.Value)) {
		return nil, m, 0, fmt.Errorf("%s: %w: chunk 0 longer than the object", dir, ErrCorrupt)
	}
	obj := make([]byte, 0, int(h.payloadLen)+HeaderSize)
	obj = append(obj, first.Value...)
	for i := 1; i < int(h.chunks); i++ {
		c, err := st.Get(ctx, chunkKey(dir, i))
		if errors.Is(err, store.ErrNotFound) {
			return nil, m, 0, fmt.Errorf("%s: %w: chunk %d of %d missing", dir, ErrCorrupt, i, h.chunks)
		}
		if err != nil {
			return nil, m, 0, err
		}
		if len(obj)+len(c.Value) > cap(obj) {
			return nil, m, 0, fmt.Errorf("%s: %w: chunks longer than the header says", dir, ErrCorrupt)
		}
		obj = append(obj, c.Value...)
	}
	raw, err = decodePayload(h, obj[HeaderSize:])
	if err != nil {
		return nil, m, 0, fmt.Errorf("%s: %w", dir, err)
	}
	return raw, h.meta, len(obj), nil
}

// readDelta reads the delta of generation gen, which must belong to
// incarnation inc.
func readDelta(ctx context.Context, st store.Store, k Keys, p Pair, lim limits) (*forwarding.Delta, int, error) {
	raw, m, n, err := readObject(ctx, st, k.objectDir(p.Generation, KindDelta), KindDelta, p.Generation, lim)
	if err != nil {
		return nil, 0, err
	}
	if m.incarnation != p.Incarnation {
		return nil, 0, fmt.Errorf("%w: delta of generation %d belongs to incarnation %d, not %d", ErrCorrupt, p.Generation, m.incarnation, p.Incarnation)
	}
	d, err := unmarshalDelta(p.Generation, raw)
	if err != nil {
		return nil, 0, fmt.Errorf("delta of generation %d: %w", p.Generation, err)
	}
	return d, n, nil
}

// readBlob reads the blob of generation gen, which must belong to
// incarnation inc (any incarnation when inc is 0: a repair salvaging what
// it can). The table carries the blob's incarnation.
func readBlob(ctx context.Context, st store.Store, k Keys, p Pair, lim limits) (*forwarding.Table, meta, int, error) {
	raw, m, n, err := readObject(ctx, st, k.objectDir(p.Generation, KindBlob), KindBlob, p.Generation, lim)
	if err != nil {
		return nil, m, 0, err
	}
	if p.Incarnation != 0 && m.incarnation != p.Incarnation {
		return nil, m, 0, fmt.Errorf("%w: blob of generation %d belongs to incarnation %d, not %d", ErrCorrupt, p.Generation, m.incarnation, p.Incarnation)
	}
	t, err := unmarshalBlob(p.Generation, raw)
	if err != nil {
		return nil, m, 0, fmt.Errorf("blob of generation %d: %w", p.Generation, err)
	}
	t.Incarnation = m.incarnation
	return t, m, n, nil
}
