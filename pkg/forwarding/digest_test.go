package forwarding

import (
	"net/netip"
	"testing"
)

// TestTableDigest: the digest ignores the pair, and changes with any
// bucket, server or MCT entry.
func TestTableDigest(t *testing.T) {
	base := func() *Table {
		t := NewTable(8)
		t.Servers[1025] = Server{Addr: netip.MustParseAddr("198.18.0.10"), State: Active}
		t.Buckets[3].Current = 1025
		return t
	}
	d := base().Digest()
	if len(d) != 16 {
		t.Fatalf("digest %q: want 16 hex digits", d)
	}
	same := base()
	same.Incarnation, same.Generation = 7, 9
	if same.Digest() != d {
		t.Error("the pair changed the digest")
	}
	for name, spoil := range map[string]func(*Table){
		"owner":   func(t *Table) { t.Buckets[3].Current = 0 },
		"history": func(t *Table) { t.Buckets[4].History[0] = 1025 },
		"changed": func(t *Table) { t.Buckets[0].Changed = 1 },
		"server":  func(t *Table) { t.Servers[1025] = Server{Addr: netip.MustParseAddr("198.18.0.11"), State: Active} },
		"state":   func(t *Table) { t.Servers[1025] = Server{Addr: netip.MustParseAddr("198.18.0.10"), State: Retired} },
		"mct":     func(t *Table) { t.MCT = map[uint64]ServerID{1: 1025} },
		"size":    func(t *Table) { t.Buckets = append(t.Buckets, Bucket{}) },
	} {
		x := base()
		spoil(x)
		if x.Digest() == d {
			t.Errorf("%s: digest unchanged", name)
		}
	}
}
