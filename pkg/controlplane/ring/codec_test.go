package ring

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// randomTable builds a valid table with n buckets over servers ids 1025…
func randomTable(rng *rand.Rand, n, servers int, gen uint32) *forwarding.Table {
	t := forwarding.NewTable(n)
	t.Generation = gen
	for i := range servers {
		t.Servers[forwarding.ServerID(1025+i)] = forwarding.Server{Addr: netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i) | 1}), State: forwarding.Active}
	}
	t.Servers[forwarding.ServerID(1025+servers)] = forwarding.Server{Addr: netip.MustParseAddr("10.9.9.9"), State: forwarding.Retired}
	for i := range t.Buckets {
		cur := forwarding.ServerID(1025 + rng.IntN(servers))
		b := forwarding.Bucket{Current: cur}
		if rng.IntN(4) == 0 {
			// A history of up to MaxChain distinct previous owners: the
			// retired server first, then others that are not the owner.
			b.History = forwarding.Chain{forwarding.ServerID(1025 + servers)}
			b.Changed = 1_700_000_000 + rng.Uint32N(1000)
			n := 1
			for _, p := range rng.Perm(servers) {
				if id := forwarding.ServerID(1025 + p); id != cur && n < 1+rng.IntN(forwarding.MaxChain) {
					b.History[n] = id
					n++
				}
			}
		}
		t.Buckets[i] = b
	}
	return t
}

func TestBlobRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 1000} {
		want := randomTable(rng, n, 5, 42)
		obj, err := encodeObject(meta{kind: KindBlob, generation: 42}, blobBytes(want), 1)
		if err != nil {
			t.Fatal(err)
		}
		h, err := parseHeader(split(obj, 1<<20)[0])
		if err != nil {
			t.Fatal(err)
		}
		raw, err := decodePayload(h, obj[HeaderSize:])
		if err != nil {
			t.Fatal(err)
		}
		got, err := unmarshalBlob(42, raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("blob of %d buckets did not round-trip", n)
		}
	}
}

func TestDeltaRoundTrip(t *testing.T) {
	want := &forwarding.Delta{
		Generation: 9,
		Servers: []forwarding.ServerChange{
			{ID: 1025, Server: forwarding.Server{Addr: netip.MustParseAddr("10.0.0.1"), State: forwarding.Active}},
			{ID: 4000, Remove: true},
		},
		Buckets: []forwarding.BucketChange{{Index: 3, Bucket: forwarding.Bucket{Current: 1025, History: forwarding.Chain{1026}, Changed: 77}}, {Index: 0, Bucket: forwarding.Bucket{Current: 1025}}},
	}
	got, err := unmarshalDelta(9, deltaBytes(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	full := &forwarding.Delta{Generation: 10, Servers: []forwarding.ServerChange{}, Buckets: []forwarding.BucketChange{
		{Index: 1, Bucket: forwarding.Bucket{Current: 1025, History: forwarding.Chain{1026, 1027, 1028, 1029, 1030, 1031}, Changed: 5}},
		{Index: 2, Bucket: forwarding.Bucket{Current: 1026, History: forwarding.Chain{1025, 1027}, Changed: 6}},
		{Index: 7, Bucket: forwarding.Bucket{Current: 1027}}}}
	if got, err := unmarshalDelta(10, deltaBytes(full)); err != nil || !reflect.DeepEqual(got, full) {
		t.Fatalf("histories: got %+v, %v", got, err)
	}
	empty, err := unmarshalDelta(3, deltaBytes(&forwarding.Delta{Generation: 3}))
	if err != nil || len(empty.Servers) != 0 || len(empty.Buckets) != 0 {
		t.Fatalf("empty delta: %+v, %v", empty, err)
	}
}

// decodeAll runs every check a reader runs on a whole encoded object.
func decodeAll(obj []byte, kind Kind, gen uint32) error {
	h, err := parseHeader(obj)
	if err != nil {
		return err
	}
	if h.kind != kind || h.generation != gen {
		return ErrCorrupt
	}
	raw, err := decodePayload(h, obj[HeaderSize:])
	if err != nil {
		return err
	}
	if kind == KindBlob {
		_, err = unmarshalBlob(gen, raw)
	} else {
		_, err = unmarshalDelta(gen, raw)
	}
	return err
}

// TestCorruptionDetected flips every bit of an encoded blob and cuts it at
// every length: each damaged copy must be rejected with ErrCorrupt.
func TestCorruptionDetected(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tab := randomTable(rng, 64, 3, 5)
	obj, err := encodeObject(meta{kind: KindBlob, generation: 5}, blobBytes(tab), 6)
	if err != nil {
		t.Fatal(err)
	}
	split(obj, len(obj)) // one chunk
	if err := decodeAll(obj, KindBlob, 5); err != nil {
		t.Fatalf("intact object rejected: %v", err)
	}
	for i := range obj {
		for bit := range 8 {
			bad := bytes.Clone(obj)
			bad[i] ^= 1 << bit
			if err := decodeAll(bad, KindBlob, 5); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("flip of byte %d bit %d: %v, want ErrCorrupt", i, bit, err)
			}
		}
	}
	for n := range len(obj) {
		if err := decodeAll(obj[:n], KindBlob, 5); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("object cut to %d of %d bytes: %v, want ErrCorrupt", n, len(obj), err)
		}
	}
	if err := decodeAll(append(bytes.Clone(obj), 0), KindBlob, 5); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("object with a trailing byte: %v", err)
	}
	if err := decodeAll(obj, KindDelta, 5); !errors.Is(err, ErrCorrupt) {
		t.Fatal("blob accepted as a delta")
	}
	if err := decodeAll(obj, KindBlob, 6); !errors.Is(err, ErrCorrupt) {
		t.Fatal("blob of generation 5 accepted as generation 6")
	}
}

// TestCorruptPayloadWithValidChecksums: a writer bug (or an attacker with
// store access) can produce an object whose checksums are right but whose
// content is wrong; the decoder must still refuse it.
func TestCorruptPayloadWithValidChecksums(t *testing.T) {
	cases := map[string][]byte{
		"count too large":    {0xff, 0xff, 0xff, 0x0f},
		"truncated servers":  {2, 0, 0, 0, 1, 4, 0, 1},
		"trailing bytes":     {0, 0, 0, 0, 0, 0, 0, 0, 9},
		"bad server op":      append([]byte{1, 0, 0, 0, 1, 4, 7, 1, 10, 0, 0, 1}, 0, 0, 0, 0),
		"owner not a server": append([]byte{0, 0, 0, 0, 1, 0, 0, 0}, 0x01, 0x04, 0, 0, 0, 0, 0, 0),
	}
	for name, raw := range cases {
		obj, err := encodeObject(meta{kind: KindBlob, generation: 1}, raw, 1)
		if err != nil {
			t.Fatal(err)
		}
		split(obj, len(obj))
		if err := decodeAll(obj, KindBlob, 1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

func TestSplit(t *testing.T) {
	obj, _ := encodeObject(meta{kind: KindDelta, generation: 1}, bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 3000), 1)
	n := len(obj)
	chunks := split(obj, 50)
	if len(chunks) != (n+49)/50 {
		t.Fatalf("%d chunks for %d bytes", len(chunks), n)
	}
	h, err := parseHeader(chunks[0])
	if err != nil || int(h.chunks) != len(chunks) {
		t.Fatalf("header says %d chunks, %v", h.chunks, err)
	}
}

// TestHistoryLengthsChecked feeds payloads whose history lengths lie: one
// longer than MaxChain, and lengths that claim more entries than the payload
// holds. Both must be ErrCorrupt, never a panic or a short read.
func TestHistoryLengthsChecked(t *testing.T) {
	d := &forwarding.Delta{Generation: 4, Buckets: []forwarding.BucketChange{
		{Index: 0, Bucket: forwarding.Bucket{Current: 1025, History: forwarding.Chain{1026, 1027}, Changed: 9}}}}
	raw := deltaBytes(d)
	// Layout: u32 S=0, u32 C=1, u32 index, u16 owner, u32 changed, u8 length, 2 × u16.
	lenAt := 4 + 4 + 4 + 2 + 4
	if raw[lenAt] != 2 {
		t.Fatalf("length byte at %d is %d: layout changed", lenAt, raw[lenAt])
	}
	for _, l := range []byte{forwarding.MaxChain + 1, 3, 255} {
		bad := bytes.Clone(raw)
		bad[lenAt] = l
		if _, err := unmarshalDelta(4, bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("history length %d: %v", l, err)
		}
	}
	if _, err := unmarshalDelta(4, raw[:len(raw)-1]); !errors.Is(err, ErrCorrupt) {
		t.Errorf("cut history: %v", err)
	}
	// A blob whose history names a server it does not hold fails Validate.
	tab := forwarding.NewTable(1)
	tab.Servers[1025] = forwarding.Server{Addr: netip.MustParseAddr("10.0.0.1"), State: forwarding.Active}
	tab.Buckets[0] = forwarding.Bucket{Current: 1025, History: forwarding.Chain{1026}}
	if _, err := unmarshalBlob(1, blobBytes(tab)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("history naming an unknown server: %v", err)
	}
}

// blobBytes and deltaBytes are marshalBlob and marshalDelta for payloads
// that cannot fail to encode here: every strategy's section is registered
// in the test binary (strategies_test.go).
func blobBytes(t *forwarding.Table) []byte {
	b, err := marshalBlob(t)
	if err != nil {
		panic(err)
	}
	return b
}

func deltaBytes(d *forwarding.Delta) []byte {
	b, err := marshalDelta(d)
	if err != nil {
		panic(err)
	}
	return b
}
