package controller

import (
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

func noneDropped(forwarding.ServerID) bool { return false }

// TestHistoryMoves: the rule for one bucket moved again and again: most
// recent owner first, no duplicates, never the owner, at most K, down
// servers skipped, unowned buckets chain nowhere.
func TestHistoryMoves(t *testing.T) {
	h := &histories{k: 4, window: 240, now: 1000, dropped: noneDropped}
	b := forwarding.Bucket{Current: 1025}
	for _, to := range []forwarding.ServerID{1026, 1027, 1028, 1029, 1030} {
		b = h.moved(0, b, forwarding.Bucket{Current: to, History: forwarding.Chain{b.Current}, Changed: 1000})
	}
	if want := (forwarding.Chain{1029, 1028, 1027, 1026}); b.History != want || b.Current != 1030 {
		t.Fatalf("after five moves: %+v, want history %v (K=4 drops the oldest)", b, want)
	}
	// Back to an older owner: it leaves the history, the one it left joins.
	b = h.moved(0, b, forwarding.Bucket{Current: 1027, History: forwarding.Chain{1030}, Changed: 1001})
	if want := (forwarding.Chain{1030, 1029, 1028, 1026}); b.History != want {
		t.Fatalf("back to 1027: %v, want %v", b.History, want)
	}
	// A down server is skipped, the others stay.
	h.dropped = func(id forwarding.ServerID) bool { return id == 1027 || id == 1029 }
	b = h.moved(0, b, forwarding.Bucket{Current: 1031, History: forwarding.Chain{1027}, Changed: 1002})
	if want := (forwarding.Chain{1030, 1028, 1026}); b.History != want {
		t.Fatalf("moved away from down 1027: %v, want %v", b.History, want)
	}
	if u := h.moved(0, b, forwarding.Bucket{Changed: 1003}); u.History.Len() != 0 {
		t.Fatalf("unowned bucket keeps history %v", u.History)
	}
	h.k = 1 // the paper: one previous owner
	if got := h.moved(0, b, forwarding.Bucket{Current: 1025, History: forwarding.Chain{1031}}); got.History != (forwarding.Chain{1031}) {
		t.Fatalf("K=1: %v", got.History)
	}
}

// TestHistoryAging: entries leave at the end of the window unless held;
// a held entry re-stamps the change time from half the window on, the
// unheld entries beside it still leave at the end.
func TestHistoryAging(t *testing.T) {
	b := forwarding.Bucket{Current: 1025, History: forwarding.Chain{1026, 1027}, Changed: 1000}
	h := &histories{instance: "web", k: 4, window: 240, dropped: noneDropped}
	h.now = 1239
	if got := h.aged(3, b); got != b {
		t.Fatalf("within the window: %+v", got)
	}
	h.now = 1240
	if got := h.aged(3, b); got.History.Len() != 0 || got.Changed != 1000 || got.Current != 1025 {
		t.Fatalf("window over: %+v", got)
	}
	var asked []forwarding.ServerID
	h.hold = func(inst string, id forwarding.ServerID, bucket uint32) bool {
		if inst != "web" || bucket != 3 {
			t.Fatalf("hold asked about %s bucket %d", inst, bucket)
		}
		asked = append(asked, id)
		return id == 1027
	}
	h.now = 1100 // before half the window: holds are not even asked
	if got := h.aged(3, b); got != b || len(asked) != 0 {
		t.Fatalf("early: %+v, asked %v", got, asked)
	}
	h.now = 1130 // half gone: 1027 is held, the bucket re-stamped, 1026 stays (window open)
	got := h.aged(3, b)
	if got.History != (forwarding.Chain{1026, 1027}) || got.Changed != 1130 {
		t.Fatalf("held at half window: %+v", got)
	}
	h.now = 1240 // b not re-stamped: the window is over, only the held entry stays
	if got := h.aged(3, b); got.History != (forwarding.Chain{1027}) || got.Changed != 1240 {
		t.Fatalf("held at the end: %+v", got)
	}
	h.hold = nil
	h.dropped = func(id forwarding.ServerID) bool { return id == 1026 }
	h.now = 1001
	if got := h.aged(3, b); got.History != (forwarding.Chain{1027}) {
		t.Fatalf("down 1026 stays: %+v", got)
	}
	h.dropped, h.k = noneDropped, 1
	if got := h.aged(3, b); got.History != (forwarding.Chain{1026}) {
		t.Fatalf("K lowered to 1: %+v", got)
	}
	far := forwarding.Bucket{Current: 1025, History: forwarding.Chain{1026}, Changed: ^uint32(0) - 10}
	if got := (&histories{k: 4, window: 240, now: 1000, dropped: noneDropped}).aged(0, far); got.History.Len() != 0 {
		t.Fatalf("change time near 2^32 (window past the end of time) kept: %+v", got)
	}
}

// TestRollingRemovalKeepsEveryOwner is issue 10's first row through the
// controller: servers removed one request at a time, inside one window.
// Every bucket must name, in order, every owner it had since, as long as
// they run; retired servers stay in the ring while named.
func TestRollingRemovalKeepsEveryOwner(t *testing.T) {
	c, root, clk := setup(t, 600, 1, 1, 1, 1, 1, 1, 1, 1)
	ctx := storetest.Context(t)
	owners := map[int][]forwarding.ServerID{} // bucket → every owner so far, newest last
	for i, b := range checkInvariants(t, root).Buckets {
		// The additions of setup moved buckets already: start from there.
		for j := b.History.Len() - 1; j >= 0; j-- {
			owners[i] = append(owners[i], b.History[j])
		}
		owners[i] = append(owners[i], b.Current)
	}
	for _, id := range []forwarding.ServerID{1025, 1026, 1027, 1028} {
		clk.advance(5 * time.Second)
		if err := c.RemoveDIP(ctx, "web", id); err != nil {
			t.Fatal(err)
		}
		tab := checkInvariants(t, root)
		for i, b := range tab.Buckets {
			if o := owners[i]; o[len(o)-1] != b.Current {
				owners[i] = append(o, b.Current)
			}
		}
		for i, b := range tab.Buckets {
			o := owners[i]
			// Expected history: previous owners, newest first, distinct, not the owner.
			var want forwarding.Chain
			n := 0
			for j := len(o) - 2; j >= 0 && n < forwarding.DefaultMaxChainLen; j-- {
				if o[j] != b.Current && !want.Contains(o[j]) {
					want[n] = o[j]
					n++
				}
			}
			if b.History != want {
				t.Fatalf("after removing %d, bucket %d owned by %v has history %v, want %v", id, i, o, b.History, want)
			}
			for _, p := range b.History[:b.History.Len()] {
				if s, ok := tab.Servers[p]; !ok || (p <= id && s.State != forwarding.Retired) {
					t.Fatalf("bucket %d names %d, which is %+v in the ring", i, p, s)
				}
			}
		}
	}
}

// TestNewOwnerDownKeepsOlderOwners: a bucket moved from A (removed,
// retired) to B; then B fails its health checks. The bucket moves on to C
// and must still name A (issue 10: the previous pointer was cleared).
func TestNewOwnerDownKeepsOlderOwners(t *testing.T) {
	c, root, _ := setup(t, 300, 1, 1, 1)
	ctx := storetest.Context(t)
	if err := c.RemoveDIP(ctx, "web", 1025); err != nil {
		t.Fatal(err)
	}
	before := checkInvariants(t, root)
	var bucket = -1
	for i, b := range before.Buckets {
		if b.Current == 1026 && b.History[0] == 1025 {
			bucket = i
			break
		}
	}
	if bucket < 0 {
		t.Fatal("no bucket moved from 1025 to 1026")
	}
	if err := c.SetHealth(ctx, "web", 1026, false); err != nil {
		t.Fatal(err)
	}
	after := checkInvariants(t, root)
	b := after.Buckets[bucket]
	if b.Current != 1027 || b.History != (forwarding.Chain{1025}) {
		t.Fatalf("bucket %d after its new owner went down: %+v, want owner 1027 history [1025]", bucket, b)
	}
	if s := after.Servers[1025]; s.State != forwarding.Retired {
		t.Fatalf("removed 1025 is %+v, want retired while named", s)
	}
}
