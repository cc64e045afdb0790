package ring

import (
	"context"
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// LoadStats describes a cold start.
type LoadStats struct {
	Generation uint32 // generation loaded
	Blob       uint32 // generation of the blob it started from
	Deltas     int    // deltas applied after the blob
	BlobBytes  int    // stored (compressed) bytes of the blob
	DeltaBytes int    // stored bytes of the deltas
}

// loadAttempts bounds restarts of a cold start that raced with garbage
// collection (the blob or a delta it was about to read was deleted because
// a newer blob appeared).
const loadAttempts = 5

// load reads the latest blob and applies the deltas after it, in order.
func load(ctx context.Context, st store.Store, k Keys) (*forwarding.Table, pointers, LoadStats, error) {
	var err error
	for range loadAttempts {
		var t *forwarding.Table
		var p pointers
		var s LoadStats
		t, p, s, err = loadOnce(ctx, st, k)
		if !errors.Is(err, errRaced) {
			return t, p, s, err
		}
	}
	return nil, pointers{}, LoadStats{}, fmt.Errorf("ring: cold start of %s kept racing with garbage collection: %w", k.Instance, err)
}

var errRaced = errors.New("generation deleted while reading")

func loadOnce(ctx context.Context, st store.Store, k Keys) (*forwarding.Table, pointers, LoadStats, error) {
	var s LoadStats
	p, err := readPointers(ctx, st, k)
	if err != nil {
		return nil, p, s, err
	}
	t, n, err := readBlob(ctx, st, k, p.blob)
	if errors.Is(err, store.ErrNotFound) {
		return nil, p, s, fmt.Errorf("%w: blob %d", errRaced, p.blob)
	}
	if err != nil {
		return nil, p, s, err
	}
	s.Blob, s.BlobBytes = p.blob, n
	for g := p.blob + 1; g <= p.gen && g != 0; g++ {
		d, n, err := readDelta(ctx, st, k, g)
		if errors.Is(err, store.ErrNotFound) {
			if _, perr := readPointers(ctx, st, k); perr == nil {
				return nil, p, s, fmt.Errorf("%w: delta %d", errRaced, g)
			}
			return nil, p, s, err
		}
		if err != nil {
			return nil, p, s, err
		}
		if err := t.Apply(d); err != nil {
			return nil, p, s, fmt.Errorf("%w: delta of generation %d does not apply: %v", ErrCorrupt, g, err)
		}
		s.Deltas++
		s.DeltaBytes += n
	}
	s.Generation = t.Generation
	return t, p, s, nil
}
