package ring

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/beamer-lb/beamer/pkg/store"
)

// Pair names one published state of an instance: the incarnation (Unix
// seconds when the controller that started it began, see Writer) and the
// generation within the ring. Pairs are totally ordered, incarnation
// first, and never reused with other content: a mux never goes from a
// pair to a lower one.
type Pair struct {
	Incarnation uint32
	Generation  uint32
}

// Less orders pairs: incarnation first, then generation.
func (p Pair) Less(q Pair) bool { return p.Word() < q.Word() }

// Word is the pair as one number (incarnation<<32 | generation), the
// order agents compare.
func (p Pair) Word() uint64 { return uint64(p.Incarnation)<<32 | uint64(p.Generation) }

func (p Pair) String() string { return fmt.Sprintf("%d@%d", p.Generation, p.Incarnation) }

// pointers are the two generation pointers as read together.
type pointers struct {
	gen, blob   Pair
	genVersion  int64 // version of latest-gen, for the writer's next commit
	blobVersion int64
}

// readPointers reads latest-gen and latest-blob. ErrNotFound means the
// instance has no ring (it does not exist, or is being created or deleted);
// ErrCorrupt that a pointer is unreadable or the two disagree.
func readPointers(ctx context.Context, st store.Store, k Keys) (pointers, error) {
	var p pointers
	// Blob first: pointers only grow, so a blob pointer read before the
	// generation pointer is never ahead of it, even when a commit moving
	// both falls between the two reads. (A commit starting a new
	// incarnation can fall between them too: the two then disagree on the
	// incarnation, and the caller retries like after any corrupt read.)
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
	if p.blob.Incarnation != p.gen.Incarnation || p.blob.Generation > p.gen.Generation {
		return p, fmt.Errorf("%w: latest-blob %v does not precede latest-gen %v", ErrCorrupt, p.blob, p.gen)
	}
	p.genVersion, p.blobVersion = g.Version, b.Version
	return p, nil
}

// maxPointerLen bounds a valid pointer: two u32 in decimal and the '@'.
const maxPointerLen = 21

// parsePointer parses GENERATION@INCARNATION, both decimal u32 without
// sign or leading zeros.
func parsePointer(v []byte) (Pair, error) {
	bad := func() (Pair, error) {
		return Pair{}, fmt.Errorf("%w: pointer %s is not GENERATION@INCARNATION", ErrCorrupt, Quote(v))
	}
	if len(v) > maxPointerLen {
		return bad()
	}
	g, i, ok := strings.Cut(string(v), "@")
	if !ok {
		return bad()
	}
	gen, ok1 := parseDecimal(g)
	inc, ok2 := parseDecimal(i)
	if !ok1 || !ok2 {
		return bad()
	}
	return Pair{Incarnation: inc, Generation: gen}, nil
}

// parseDecimal accepts exactly the numbers formatPointer writes.
func parseDecimal(s string) (uint32, bool) {
	if s == "" || s[0] < '0' || s[0] > '9' || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 32)
	return uint32(n), err == nil
}

func formatPointer(p Pair) []byte { return []byte(p.String()) }

// quoteMax is how much of a value a message quotes: enough to recognise
// it, never enough to flood a log with a hostile megabyte.
const quoteMax = 32

// Quote renders a value read from the store for a log line or an error:
// at most its first 32 bytes, quoted, and its length when it is longer.
func Quote(v []byte) string {
	if len(v) <= quoteMax {
		return strconv.Quote(string(v))
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(string(v[:quoteMax])), len(v))
}
