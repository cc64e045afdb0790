package ring_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// The sizes of Cheetah's section (pkg/strategy/cheetah/payload.go) as the
// stored format has them: magic, key id and pad, two keys, load count; one
// load record.
const (
	cheetahFixed  = 4 + 4 + 32 + 4
	cheetahRecord = 8
)

// Cheetah's section (keys and loads) round-trips in blobs and deltas, also
// beside an MCT section; payloads without it are byte for byte what they
// were; a damaged section is refused as corrupt.
func TestCheetahSectionRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 0))
	tab := ring.RandomTable(rng, 300, 5, 7)
	plain := ring.BlobBytes(tab)
	st := &forwarding.CheetahState{Keys: cookie.Keys{Current: 1, Keys: [2]cookie.Key{{1, 2, 3, 4}, {0xdeadbeef, 6, 7, 0xffffffff}}},
		Loads: map[forwarding.ServerID]uint32{1025: 7, 1027: 0, 1026: 1 << 31}}
	tab.Cheetah = st
	raw := ring.BlobBytes(tab)
	if !bytes.Equal(raw[:len(plain)], plain) || len(raw) != len(plain)+4+cheetahFixed+3*cheetahRecord {
		t.Fatalf("blob with cheetah state: %d bytes, without %d: not an empty MCT section and the cheetah section after", len(raw), len(plain))
	}
	got, err := ring.UnmarshalBlob(7, raw)
	if err != nil || !reflect.DeepEqual(got.Cheetah, st) || got.MCT != nil {
		t.Fatalf("blob: %v, cheetah %+v (want %+v), MCT %v", err, got.Cheetah, st, got.MCT)
	}
	for _, d := range []*forwarding.Delta{
		{Generation: 8, Buckets: []forwarding.BucketChange{{Index: 3, Bucket: forwarding.Bucket{Current: 1026}}}, Cheetah: st},
		{Generation: 8, MCT: []forwarding.MCTChange{{Sig: 9, Server: 1025}}, Cheetah: &forwarding.CheetahState{Keys: st.Keys}},
	} {
		raw := ring.DeltaBytes(d)
		back, err := ring.UnmarshalDelta(8, raw)
		if err != nil || !reflect.DeepEqual(back.Cheetah, d.Cheetah) || !reflect.DeepEqual(back.MCT, d.MCT) {
			t.Fatalf("delta: %v\n got %+v\nwant %+v", err, back, d)
		}
		for _, cut := range []int{1, 4, cheetahRecord} {
			if _, err := ring.UnmarshalDelta(8, raw[:len(raw)-cut]); !errors.Is(err, ring.ErrCorrupt) {
				t.Errorf("cheetah section short by %d: %v", cut, err)
			}
		}
	}
	// A zero current key, unsorted loads, a bad magic: corrupt.
	for name, spoil := range map[string]func(b []byte, at int){
		"zero current key": func(b []byte, at int) { copy(b[at+8+16:at+8+32], make([]byte, 16)) },
		"bad magic":        func(b []byte, at int) { b[at] ^= 1 },
		"key id 2":         func(b []byte, at int) { b[at+4] = 2 },
		"unsorted loads":   func(b []byte, at int) { b[at+cheetahFixed] = 0xff; b[at+cheetahFixed+1] = 0x7f },
	} {
		b := ring.BlobBytes(tab)
		spoil(b, len(plain)+4)
		if _, err := ring.UnmarshalBlob(7, b); !errors.Is(err, ring.ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The table read back equals the published one only with the same state.
	other := tab.Clone()
	other.Cheetah.Loads[1025]++
	if ring.SameTable(tab, other) || !ring.SameTable(tab, tab.Clone()) {
		t.Error("sameTable ignores the cheetah state")
	}
}
