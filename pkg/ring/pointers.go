package ring

import (
	"context"
	"fmt"
	"strconv"

	"github.com/beamer-lb/beamer/pkg/store"
)

// pointers are the two generation pointers as read together.
type pointers struct {
	gen, blob   uint32
	genVersion  int64 // version of latest-gen, for the writer's next commit
	blobVersion int64
}

// readPointers reads latest-gen and latest-blob. ErrNotFound means the
// instance has no ring (it does not exist, or is being created or deleted).
func readPointers(ctx context.Context, st store.Store, k Keys) (pointers, error) {
	var p pointers
	// Blob first: both pointers only grow, so a blob pointer read before
	// the generation pointer is never ahead of it, even when a commit
	// moving both falls between the two reads.
	b, err := st.Get(ctx, k.LatestBlob())
	if err != nil {
		return p, err
	}
	g, err := st.Get(ctx, k.LatestGen())
	if err != nil {
		return p, err
	}
	if p.gen, err = parsePointer(g.Value); err != nil {
		return p, fmt.Errorf("%s: %w", k.LatestGen(), err)
	}
	if p.blob, err = parsePointer(b.Value); err != nil {
		return p, fmt.Errorf("%s: %w", k.LatestBlob(), err)
	}
	if p.blob > p.gen {
		return p, fmt.Errorf("%w: latest blob %d is newer than latest generation %d", ErrCorrupt, p.blob, p.gen)
	}
	p.genVersion, p.blobVersion = g.Version, b.Version
	return p, nil
}

func parsePointer(v []byte) (uint32, error) {
	n, err := strconv.ParseUint(string(v), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: generation pointer %q is not a number", ErrCorrupt, v)
	}
	return uint32(n), nil
}

func formatPointer(g uint32) []byte { return []byte(strconv.FormatUint(uint64(g), 10)) }
