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

// readObject reads and verifies the object under dir and returns its raw
// payload. A missing chunk 0 is ErrNotFound (the generation was deleted or
// never written); everything else wrong is ErrCorrupt.
func readObject(ctx context.Context, st store.Store, dir string, kind Kind, gen uint32) (raw []byte, size int, err error) {
	first, err := st.Get(ctx, chunkKey(dir, 0))
	if err != nil {
		return nil, 0, err
	}
	h, err := parseHeader(first.Value)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", dir, err)
	}
	if h.kind != kind || h.generation != gen {
		return nil, 0, fmt.Errorf("%s: %w: header says %v of generation %d", dir, ErrCorrupt, h.kind, h.generation)
	}
	if uint64(h.payloadLen)+HeaderSize < uint64(len(first.Value)) {
		return nil, 0, fmt.Errorf("%s: %w: chunk 0 longer than the object", dir, ErrCorrupt)
	}
	obj := make([]byte, 0, int(h.payloadLen)+HeaderSize)
	obj = append(obj, first.Value...)
	for i := 1; i < int(h.chunks); i++ {
		c, err := st.Get(ctx, chunkKey(dir, i))
		if errors.Is(err, store.ErrNotFound) {
			return nil, 0, fmt.Errorf("%s: %w: chunk %d of %d missing", dir, ErrCorrupt, i, h.chunks)
		}
		if err != nil {
			return nil, 0, err
		}
		if len(obj)+len(c.Value) > cap(obj) {
			return nil, 0, fmt.Errorf("%s: %w: chunks longer than the header says", dir, ErrCorrupt)
		}
		obj = append(obj, c.Value...)
	}
	raw, err = decodePayload(h, obj[HeaderSize:])
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", dir, err)
	}
	return raw, len(obj), nil
}

func readDelta(ctx context.Context, st store.Store, k Keys, gen uint32) (*forwarding.Delta, int, error) {
	raw, n, err := readObject(ctx, st, k.objectDir(gen, KindDelta), KindDelta, gen)
	if err != nil {
		return nil, 0, err
	}
	d, err := unmarshalDelta(gen, raw)
	if err != nil {
		return nil, 0, fmt.Errorf("delta of generation %d: %w", gen, err)
	}
	return d, n, nil
}

func readBlob(ctx context.Context, st store.Store, k Keys, gen uint32) (*forwarding.Table, int, error) {
	raw, n, err := readObject(ctx, st, k.objectDir(gen, KindBlob), KindBlob, gen)
	if err != nil {
		return nil, 0, err
	}
	t, err := unmarshalBlob(gen, raw)
	if err != nil {
		return nil, 0, fmt.Errorf("blob of generation %d: %w", gen, err)
	}
	return t, n, nil
}
