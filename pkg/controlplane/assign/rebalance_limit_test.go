package assign

import (
	"slices"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestRebalanceFullHistoriesStay: when a server is added, a donor that
// stays gives its oldest buckets with the shortest histories first, and
// never a bucket whose history is already at K; a donor that leaves gives
// every bucket, full histories included; a donor with nothing movable left
// stays above its share rather than forget an owner.
func TestRebalanceFullHistoriesStay(t *testing.T) {
	const k = 2
	full := forwarding.Chain{c, d}
	start := []forwarding.Bucket{
		{Current: a, Changed: 10, History: full}, // oldest, but full
		{Current: a, Changed: 50, History: forwarding.Chain{c}},
		{Current: a, Changed: 50},                // as old, shorter history: first
		{Current: a, Changed: 90},                // youngest
		{Current: b, Changed: 10, History: full}, // full
		{Current: b, Changed: 20, History: full}, // full
		{Current: b, Changed: 30, History: full}, // full
		{Current: b, Changed: 40},
	}
	servers := []Server{{a, 1}, {b, 1}, {c + 10, 1}, {d + 10, 1}}
	ch := RebalanceLimited(start, servers, 100, k)
	var moved []uint32
	for _, x := range ch {
		moved = append(moved, x.Index)
		if start[x.Index].History.Len() >= k {
			t.Errorf("bucket %d with a full history moved: %+v", x.Index, start[x.Index])
		}
	}
	// a must give 2 (of 4): buckets 2 then 1 (same age, shorter history
	// first), not 0 (full) nor 3 (youngest). b must give 2 but has one
	// movable bucket: it gives 7 and keeps the rest.
	slices.Sort(moved)
	if want := []uint32{1, 2, 7}; !slices.Equal(moved, want) {
		t.Fatalf("moved buckets %v, want %v", moved, want)
	}
	// Without a limit the same rebalance takes the oldest, full or not.
	if n := len(Rebalance(start, servers, 100)); n != 4 {
		t.Fatalf("unlimited rebalance moved %d buckets, want 4", n)
	}
	// b leaves: all its buckets move, full histories included.
	ch = RebalanceLimited(start, []Server{{a, 1}, {b, 0}, {c + 10, 1}}, 100, k)
	gone := 0
	for _, x := range ch {
		if start[x.Index].Current == b {
			gone++
		}
	}
	if gone != 4 {
		t.Fatalf("leaving server gave %d of its 4 buckets", gone)
	}
}
