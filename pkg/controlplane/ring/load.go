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
	Incarnation uint32 `json:"incarnation"`     // incarnation loaded
	Generation  uint32 `json:"generation"`      // generation loaded
	Blob        uint32 `json:"blob_generation"` // generation of the blob it started from
	Resync      bool   `json:"resync"`          // that blob began the incarnation (declared resync)
	Deltas      int    `json:"deltas"`          // deltas applied after the blob
	BlobBytes   int    `json:"blob_bytes"`      // stored (compressed) bytes of the blob
	DeltaBytes  int    `json:"delta_bytes"`     // stored bytes of the deltas
}

// loadAttempts bounds restarts of a cold start that raced with garbage
// collection (the blob or a delta it was about to read was deleted because
// a newer blob appeared) or with a new incarnation.
const loadAttempts = 5

// ringLimits reads the instance's configuration for the bounds on what its
// objects may claim to be.
func ringLimits(ctx context.Context, st store.Store, k Keys) (limits, error) {
	in, err := ReadInstance(ctx, st, k)
	if err != nil {
		return limits{}, err
	}
	return instanceLimits(in.Buckets, st.MaxValueSize()), nil
}

// load reads the latest blob and applies the deltas after it, in order.
func load(ctx context.Context, st store.Store, k Keys) (*forwarding.Table, pointers, LoadStats, error) {
	lim, err := ringLimits(ctx, st, k)
	if err != nil {
		return nil, pointers{}, LoadStats{}, err
	}
	for range loadAttempts {
		var t *forwarding.Table
		var p pointers
		var s LoadStats
		t, p, s, err = loadOnce(ctx, st, k, lim)
		if !errors.Is(err, errRaced) {
			return t, p, s, err
		}
	}
	return nil, pointers{}, LoadStats{}, fmt.Errorf("ring: cold start of %s kept racing with garbage collection: %w", k.Instance, err)
}

var errRaced = errors.New("generation deleted while reading")

// moved reports whether the pointers changed since p, which makes what
// loadOnce failed on a race rather than damage.
func moved(ctx context.Context, st store.Store, k Keys, p pointers) bool {
	q, err := readPointers(ctx, st, k)
	return err == nil && q.gen != p.gen
}

func loadOnce(ctx context.Context, st store.Store, k Keys, lim limits) (*forwarding.Table, pointers, LoadStats, error) {
	var s LoadStats
	p, err := readPointers(ctx, st, k)
	if err != nil {
		return nil, p, s, err
	}
	t, m, n, err := readBlob(ctx, st, k, p.blob, lim)
	if err != nil {
		if moved(ctx, st, k, p) {
			return nil, p, s, fmt.Errorf("%w: blob %v: %v", errRaced, p.blob, err)
		}
		if errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("%w: blob %v named by latest-blob is missing", ErrCorrupt, p.blob)
		}
		return nil, p, s, err
	}
	s.Blob, s.BlobBytes, s.Resync = p.blob.Generation, n, m.resync
	for g := p.blob.Generation + 1; g <= p.gen.Generation && g != 0; g++ {
		d, n, err := readDelta(ctx, st, k, Pair{p.gen.Incarnation, g}, lim)
		if err == nil {
			if cerr := t.Check(d); cerr != nil {
				err = fmt.Errorf("%w: delta of generation %d does not apply: %v", ErrCorrupt, g, cerr)
			}
		}
		if err != nil {
			if moved(ctx, st, k, p) {
				return nil, p, s, fmt.Errorf("%w: delta %d: %v", errRaced, g, err)
			}
			if errors.Is(err, store.ErrNotFound) {
				err = fmt.Errorf("%w: delta of generation %d is missing (gap before latest-gen %v)", ErrCorrupt, g, p.gen)
			}
			return nil, p, s, err
		}
		t.ApplyChecked(d) // Check passed above
		s.Deltas++
		s.DeltaBytes += n
	}
	s.Incarnation, s.Generation = t.Incarnation, t.Generation
	return t, p, s, nil
}
