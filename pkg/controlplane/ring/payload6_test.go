package ring

import (
	"bytes"
	"encoding/hex"
	"errors"
	"net/netip"
	"reflect"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

func v6Table() *forwarding.Table {
	t := forwarding.NewTable(4)
	t.Generation = 9
	t.Servers[1025] = forwarding.Server{Addr: netip.MustParseAddr("2001:db8::10"), State: forwarding.Active}
	t.Servers[1026] = forwarding.Server{Addr: netip.MustParseAddr("2001:db8:ffff::11"), State: forwarding.Active}
	t.Servers[1027] = forwarding.Server{Addr: netip.MustParseAddr("2001:db8::12"), State: forwarding.Retired}
	t.Buckets = []forwarding.Bucket{{Current: 1025}, {Current: 1026, History: forwarding.Chain{1027}, Changed: 77}, {Current: 1025}, {Current: 1026}}
	return t
}

// TestIPv6ServersRoundTrip: blobs and deltas carry IPv6 server addresses
// whole (20-byte records), and removals of IPv6 servers.
func TestIPv6ServersRoundTrip(t *testing.T) {
	want := v6Table()
	raw := blobBytes(want)
	if len(raw) != 4+3*serverRecord6+4+bucketColumnsSize(4, 1) {
		t.Fatalf("blob of %d bytes", len(raw))
	}
	got, err := unmarshalBlob(9, raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Servers, want.Servers) || !reflect.DeepEqual(got.Buckets, want.Buckets) {
		t.Fatalf("blob: got %+v, want %+v", got, want)
	}
	d := &forwarding.Delta{Generation: 10,
		Servers: []forwarding.ServerChange{
			{ID: 1028, Server: forwarding.Server{Addr: netip.MustParseAddr("2001:db8::13"), State: forwarding.Active}},
			{ID: 1027, Remove: true},
			{ID: 1029, Remove: true, Server: forwarding.Server{Addr: netip.MustParseAddr("2001:db8::14")}},
		},
		Buckets: []forwarding.BucketChange{{Index: 1, Bucket: forwarding.Bucket{Current: 1028, History: forwarding.Chain{1026}, Changed: 78}}}}
	back, err := unmarshalDelta(10, deltaBytes(d))
	if err != nil {
		t.Fatal(err)
	}
	d.Servers[2].Server = forwarding.Server{} // a removal reads back with no address
	if !reflect.DeepEqual(back, d) {
		t.Fatalf("delta: got %+v, want %+v", back, d)
	}
	if err := want.Apply(back); err != nil || want.Servers[1028].Addr != netip.MustParseAddr("2001:db8::13") {
		t.Fatalf("IPv6 delta read back does not apply: %v", err)
	}
}

// TestIPv4PayloadUnchanged: an IPv4 blob is byte for byte what controllers
// wrote before IPv6 (this hex is from the codec before the change), so a
// store written by an older controller loads, and an older mux reads what
// a newer controller writes for IPv4 instances.
func TestIPv4PayloadUnchanged(t *testing.T) {
	const old = "0200000001040001c612000a02040002c612000b040000000104010401040104000000002c0100000000000000000000000100000204"
	tab := forwarding.NewTable(4)
	tab.Generation = 3
	tab.Servers[1025] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.10"), State: forwarding.Active}
	tab.Servers[1026] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.11"), State: forwarding.Retired}
	tab.Buckets = []forwarding.Bucket{{Current: 1025}, {Current: 1025, History: forwarding.Chain{1026}, Changed: 300}, {Current: 1025}, {Current: 1025}}
	raw, err := hex.DecodeString(old)
	if err != nil {
		t.Fatal(err)
	}
	if got := blobBytes(tab); !bytes.Equal(got, raw) {
		t.Fatalf("IPv4 blob changed:\n got %x\nwant %s", got, old)
	}
	back, err := unmarshalBlob(3, raw)
	if err != nil || !reflect.DeepEqual(back.Servers, tab.Servers) || !reflect.DeepEqual(back.Buckets, tab.Buckets) {
		t.Fatalf("old blob: %+v, %v", back, err)
	}
	const oldDelta = "0200000003040001c612000c02040100000000000100000001000000030490010000010104"
	d := &forwarding.Delta{Generation: 4,
		Servers: []forwarding.ServerChange{{ID: 1027, Server: forwarding.Server{Addr: netip.MustParseAddr("198.18.0.12"), State: forwarding.Active}}, {ID: 1026, Remove: true}},
		Buckets: []forwarding.BucketChange{{Index: 1, Bucket: forwarding.Bucket{Current: 1027, History: forwarding.Chain{1025}, Changed: 400}}}}
	if got := hex.EncodeToString(deltaBytes(d)); got != oldDelta {
		t.Fatalf("IPv4 delta changed:\n got %s\nwant %s", got, oldDelta)
	}
	raw, _ = hex.DecodeString(oldDelta)
	if dd, err := unmarshalDelta(4, raw); err != nil || !reflect.DeepEqual(dd, d) {
		t.Fatalf("old delta: %+v, %v", dd, err)
	}
}

// TestIPv6RecordsCorrupt: a truncated IPv6 record, an unknown op bit and a
// mapped address in an IPv6 record are refused as corrupt, never read.
func TestIPv6RecordsCorrupt(t *testing.T) {
	raw := blobBytes(v6Table())
	for name, b := range map[string][]byte{
		"truncated in the address": raw[:4+serverRecord6+10],
		"count beyond the payload": append([]byte{200, 0, 0, 0}, raw[4:]...),
		"op bit 2":                 func() []byte { c := bytes.Clone(raw); c[4+2] |= 4; return c }(),
		"mapped address": func() []byte {
			c := bytes.Clone(raw)
			a := netip.MustParseAddr("::ffff:198.18.0.10").As16()
			copy(c[4+4:], a[:])
			return c
		}(),
		"IPv4 bytes read as IPv6": func() []byte { c := bytes.Clone(raw); c[4+2] = 0; return c }(),
	} {
		if _, err := unmarshalBlob(9, b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestIPv6TableWithinLimits: the largest table of IPv6 servers (every id,
// the fewest buckets that allow it) fits the bound a reader checks before
// it allocates.
func TestIPv6TableWithinLimits(t *testing.T) {
	n := int(forwarding.MaxServerID-forwarding.MinServerID) + 1
	tab := forwarding.NewTable(n + 1)
	for i := range n {
		id := forwarding.MinServerID + forwarding.ServerID(i)
		a := netip.MustParseAddr("2001:db8::").As16()
		a[14], a[15] = byte(i>>8), byte(i)
		tab.Servers[id] = forwarding.Server{Addr: netip.AddrFrom16(a), State: forwarding.Active}
		tab.Buckets[i] = forwarding.Bucket{Current: id}
	}
	raw := blobBytes(tab)
	if lim := instanceLimits(uint32(len(tab.Buckets)), 1<<20); len(raw) > int(lim.raw) {
		t.Fatalf("a blob of %d IPv6 servers takes %d bytes, above the reader's bound %d", n, len(raw), lim.raw)
	}
	if _, err := unmarshalBlob(1, raw); err != nil {
		t.Fatal(err)
	}
}
