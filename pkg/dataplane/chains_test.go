package dataplane

import (
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestChainTable: histories are interned once with a count of the words
// naming them; a slot is reused only when nothing names it, never-used
// slots first and then the slot freed longest ago; a history named again
// before its slot is reused keeps it; a full table leaves the history out
// and counts it; the kernel entry holds the ids.
func TestChainTable(t *testing.T) {
	netlabtest.RequireRoot(t)
	c, err := newChainTable(4) // references 1..3
	must(t, err)
	defer c.close()
	acq := func(h forwarding.Chain) uint16 {
		t.Helper()
		r, ok, err := c.acquire(h)
		must(t, err)
		if !ok {
			t.Fatalf("history %v left out", h)
		}
		return r
	}
	x, y, z, w := forwarding.Chain{1025}, forwarding.Chain{1026, 1025}, forwarding.Chain{1027, 1026, 1025}, forwarding.Chain{1028}
	if r := acq(forwarding.Chain{}); r != 0 {
		t.Fatalf("empty history got reference %d", r)
	}
	rx, ry := acq(x), acq(y)
	if rx != 1 || ry != 2 || acq(x) != rx {
		t.Fatalf("references %d %d, want 1 2 and x interned", rx, ry)
	}
	var e [16]byte
	must(t, c.m.Lookup(uint32(ry), &e))
	if e != chainEntry(y) || e[0] != 2 || e[2] != 0x02 || e[3] != 0x04 {
		t.Fatalf("kernel entry of %v: % x", y, e)
	}
	c.release(rx) // x still named once
	c.release(ry) // y free: its slot waits
	if rz := acq(z); rz != 3 {
		t.Fatalf("z got %d: never-used slot 3 comes before freed 2", rz)
	}
	if acq(y) != ry {
		t.Fatal("y named again before its slot was reused: not given back")
	}
	c.release(ry)
	if rw := acq(w); rw != ry {
		t.Fatalf("w got %d, want freed slot %d", rw, ry)
	}
	if _, ok, _ := c.acquire(forwarding.Chain{1029}); ok || c.overflow != 1 {
		t.Fatalf("full table: accepted, or overflow %d", c.overflow)
	}
	if c.used() != 3 {
		t.Fatalf("used %d, want 3", c.used())
	}
	c.release(rx)
	c.release(rx) // a second release of a free slot changes nothing
	if rv := acq(forwarding.Chain{1030}); rv != rx {
		t.Fatalf("reuse after release got %d, want %d", rv, rx)
	}
}

// TestChainSlotReuseWaitsForGrace: a freed slot is reused only after an RCU
// grace period since its latest release — also when it was named and freed
// again after a wait, which leaves a stale entry of it on the free list (the
// cause of torn histories TestMuxNeverTorn found).
func TestChainSlotReuseWaitsForGrace(t *testing.T) {
	netlabtest.RequireRoot(t)
	c, err := newChainTable(3) // references 1..2
	must(t, err)
	defer c.close()
	graces := 0
	c.grace = func() error { graces++; return nil }
	acq := func(h forwarding.Chain) uint16 {
		t.Helper()
		r, ok, err := c.acquire(h)
		must(t, err)
		if !ok {
			t.Fatalf("history %v left out", h)
		}
		return r
	}
	a, b := forwarding.Chain{1025}, forwarding.Chain{1026}
	ra, rb := acq(a), acq(b)
	c.release(ra)
	c.release(rb)
	// Both freed, no wait yet: the first reuse waits, then takes the
	// oldest (ra); rb is free after that wait.
	if r := acq(forwarding.Chain{1027}); r != ra || graces != 1 {
		t.Fatalf("got %d after %d grace periods, want %d after 1", r, graces, ra)
	}
	// b named again (its slot back, no write) and freed again: its entry
	// on the free list predates this release, so reusing rb needs a wait.
	if acq(b) != rb {
		t.Fatal("history named again did not get its slot back")
	}
	c.release(rb)
	if r := acq(forwarding.Chain{1028}); r != rb || graces != 2 {
		t.Fatalf("slot %d reused after %d grace periods, want %d after 2: its latest release had none after it", r, graces, rb)
	}
}
