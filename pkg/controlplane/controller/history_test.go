package controller

import (
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

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
// and must still name A (issue 10: the previous pointer was cleared), and
// B behind it (B may still run and hold connections).
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
	if b.Current != 1027 || b.History != (forwarding.Chain{1025, 1026}) {
		t.Fatalf("bucket %d after its new owner went down: %+v, want owner 1027 history [1025 1026]", bucket, b)
	}
	if s := after.Servers[1025]; s.State != forwarding.Retired {
		t.Fatalf("removed 1025 is %+v, want retired while named", s)
	}
}
