package forwarding

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// TestCheckRemovals: a delta may retire or remove a server only if no
// bucket, as the delta leaves it (the last change of an index wins, as in
// Apply), is owned by it, nor names a removed one in its history; the
// lowest such bucket is reported.
func TestCheckRemovals(t *testing.T) {
	tab := twoServerTable() // buckets 0, 2 → 1025; 1, 3 → 1026
	tab.Generation = 1
	tab.Buckets[2].History[0] = 1026 // moved from 1026 lately
	retire := ServerChange{ID: 1026, Server: Server{Addr: netip.MustParseAddr("198.18.0.11"), State: Retired}}
	remove := ServerChange{ID: 1026, Remove: true}
	to := func(i uint32, cur ServerID, hist ...ServerID) BucketChange {
		b := Bucket{Current: cur}
		copy(b.History[:], hist)
		return BucketChange{Index: i, Bucket: b}
	}
	cases := []struct {
		name string
		d    Delta
		want string // "" = valid
	}{
		{"retire an owner", Delta{Servers: []ServerChange{retire}}, "bucket 1 is still owned by retired server 1026"},
		{"retire, one bucket moved", Delta{Servers: []ServerChange{retire}, Buckets: []BucketChange{to(1, 1025, 1026)}}, "bucket 3 is still owned by retired server 1026"},
		{"retire, all moved, chained to", Delta{Servers: []ServerChange{retire}, Buckets: []BucketChange{to(3, 1025, 1026), to(1, 1025, 1026)}}, ""},
		{"remove while chained to", Delta{Servers: []ServerChange{remove}, Buckets: []BucketChange{to(3, 1025), to(1, 1025)}}, "bucket 2 still names removed server 1026 as previous owner"},
		{"remove, chain entry dropped", Delta{Servers: []ServerChange{remove}, Buckets: []BucketChange{to(3, 1025), to(2, 1025), to(1, 1025)}}, ""},
		{"last change wins (breaks)", Delta{Servers: []ServerChange{retire}, Buckets: []BucketChange{to(1, 1025), to(3, 1025), to(1, 1026)}}, "bucket 1: owner 1026 is retired"},
	}
	for _, c := range cases {
		c.d.Generation = 2
		err := tab.Check(&c.d)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
