package cheetahsim

import (
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// The published Beamer (one previous owner, fixed window) breaks two kinds
// of connection that this product's Beamer (K previous owners, holds)
// keeps: one whose bucket moves twice during its life, and one that
// outlives the window after its bucket moved. Both models see the same
// updates; the test fails if they behaved alike.
func TestPublishedBeamerBreaksWhatProductKeeps(t *testing.T) {
	const window = 240
	srv := func(ids ...forwarding.ServerID) []assign.Server {
		var s []assign.Server
		for _, id := range ids {
			s = append(s, assign.Server{ID: id, Weight: 1})
		}
		return s
	}
	a, b, c := forwarding.MinServerID, forwarding.MinServerID+1, forwarding.MinServerID+2

	t.Run("bucket moved twice", func(t *testing.T) {
		prod, pub := newBeamerTables(3, srv(a, b, c), 4, window)
		const bucket = 0
		if prod.owner(bucket) != a || pub.owner(bucket) != a {
			t.Fatalf("bucket %d owned by %d (product) and %d (published), want %d", bucket, prod.owner(bucket), pub.owner(bucket), a)
		}
		prod.open(a, bucket)
		// a leaves: its bucket moves to b or c; then that owner leaves too
		// and everything ends on the last server. Two moves within 20 s,
		// far inside the window.
		prod.update(srv(b, c), 100)
		pub.update(srv(b, c), 100)
		first := pub.owner(bucket)
		rest := b
		if first == b {
			rest = c
		}
		prod.update(srv(rest), 120)
		pub.update(srv(rest), 120)
		if pub.owner(bucket) != rest || prod.owner(bucket) != rest {
			t.Fatalf("bucket owned by %d (product) and %d (published), want %d", prod.owner(bucket), pub.owner(bucket), rest)
		}
		if !prod.reaches(bucket, a) {
			t.Errorf("product: a connection on %d broken after two moves (history %v)", a, prod.buckets[bucket].History)
		}
		if pub.reaches(bucket, a, 121) {
			t.Errorf("published: a connection on %d still reached after two moves (previous %d): the one-previous-owner model is not one", a, pub.buckets[bucket].History[0])
		}
		if !pub.reaches(bucket, first, 121) {
			t.Errorf("published: the previous owner %d is not chained to within the window", first)
		}
	})

	t.Run("connection outlives the window", func(t *testing.T) {
		prod, pub := newBeamerTables(3, srv(a, b, c), 4, window)
		const bucket = 0
		prod.open(a, bucket)
		prod.update(srv(b, c), 100)
		pub.update(srv(b, c), 100)
		// Generations without moves (the controller ages histories): the
		// product holds the entry while a reports the connection.
		for now := uint32(150); now <= 1000; now += 50 {
			prod.update(srv(b, c), now)
			pub.update(srv(b, c), now)
		}
		if !prod.reaches(bucket, a) {
			t.Errorf("product: a held connection on %d broken after the window (history %v)", a, prod.buckets[bucket].History)
		}
		if !pub.reaches(bucket, a, 100+window-1) {
			t.Errorf("published: previous owner %d not chained to inside the window", a)
		}
		if pub.reaches(bucket, a, 100+window) {
			t.Errorf("published: previous owner %d still chained to when the window closed", a)
		}
		// Once a reports nothing, the product lets the entry expire too.
		prod.close(a, bucket)
		prod.update(srv(b, c), 2000)
		if prod.reaches(bucket, a) {
			t.Errorf("product: entry %d kept after its last connection closed and the window passed", a)
		}
	})
}
