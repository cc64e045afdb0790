package controller

import (
	"errors"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestServerComesBack is a rolling restart: a server removed and, within
// the chaining window, added again with the same id and address. Its id is
// still retired and named in the histories of the buckets it gave up; it
// must come back active under the same id without any history losing it
// (its remaining connections are still chained to it) and without moving
// the buckets others took over from it (their new connections live there).
// With health checks, it comes back pending and histories still name it.
// Another address for the retired id is refused.
func TestServerComesBack(t *testing.T) {
	for _, pending := range []bool{false, true} {
		root, clk := newRoot(), newClock()
		c := New(shared, root, Options{Now: clk.now, PendingUntilProbed: pending})
		ctx := storetest.Context(t)
		if err := c.CreateInstance(ctx, webInstance(400)); err != nil {
			t.Fatal(err)
		}
		var all []NewDIP
		for id := forwarding.ServerID(1025); id <= 1028; id++ {
			all = append(all, NewDIP{id, dipAddr(id), 1})
		}
		if err := c.AddDIPs(ctx, "web", all); err != nil {
			t.Fatal(err)
		}
		for id := forwarding.ServerID(1025); id <= 1028; id++ {
			if err := c.SetHealth(ctx, "web", id, true); err != nil { // first good probe
				t.Fatal(err)
			}
		}
		clk.advance(time.Hour)
		if err := c.RemoveDIP(ctx, "web", 1026); err != nil {
			t.Fatal(err)
		}
		removed := checkInvariants(t, root)
		if removed.Servers[1026].State != forwarding.Retired {
			t.Fatalf("removed server is %+v, want retired", removed.Servers[1026])
		}
		naming := map[int]bool{}
		for i, b := range removed.Buckets {
			if b.History.Contains(1026) {
				naming[i] = true
			}
		}
		if len(naming) != 100 {
			t.Fatalf("%d buckets name the removed server, want its 100", len(naming))
		}
		clk.advance(10 * time.Second)
		if err := c.AddDIP(ctx, "web", 1026, dipAddr(1099), 1); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("retired id with another address: %v", err)
		}
		if err := c.AddDIP(ctx, "web", 1026, dipAddr(1026), 1); err != nil {
			t.Fatalf("re-adding the server (pending=%v): %v", pending, err)
		}
		back, err := loadTable(t, root)
		if err != nil {
			t.Fatal(err)
		}
		if s := back.Servers[1026]; s.State != forwarding.Active || s.Addr != dipAddr(1026) {
			t.Fatalf("re-added server in the ring: %+v", s)
		}
		for i := range naming {
			b := back.Buckets[i]
			if b.Current != 1026 && !b.History.Contains(1026) {
				t.Fatalf("bucket %d lost the re-added server from its history: %+v", i, b)
			}
			if b.Current != removed.Buckets[i].Current {
				t.Errorf("bucket %d, taken over 10 s ago, moved again (%d → %d) while older buckets could", i, removed.Buckets[i].Current, b.Current)
			}
		}
		if pending {
			if n := count(back, 1026); n != 0 {
				t.Fatalf("re-added server owns %d buckets before its first good probe", n)
			}
			if err := c.SetHealth(ctx, "web", 1026, true); err != nil { // its first good probe
				t.Fatal(err)
			}
		}
		final := checkInvariants(t, root)
		if n := count(final, 1026); n != 100 {
			t.Fatalf("re-added server owns %d buckets, want 100", n)
		}
		for i := range naming {
			if b := final.Buckets[i]; b.Current != 1026 && !b.History.Contains(1026) {
				t.Fatalf("after it came up, bucket %d lost the server from its history: %+v", i, b)
			}
		}
		// The connections others took on meanwhile are chained from 1026's new buckets.
		for i, b := range final.Buckets {
			if b.Current == 1026 && removed.Buckets[i].Current != 1026 && b.History[0] != removed.Buckets[i].Current {
				t.Fatalf("bucket %d moved %d → 1026 without naming %d: %+v", i, removed.Buckets[i].Current, removed.Buckets[i].Current, b)
			}
		}
	}
}
