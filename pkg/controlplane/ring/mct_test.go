package ring_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// mctRecord is the size of one record of Prism's MCT section
// (pkg/strategy/prism/payload.go), as the stored format has it.
const mctRecord = 12

// Prism's MCT section round-trips in blobs and deltas; payloads without
// MCT are byte for byte what they were (no section); a damaged section is
// refused as corrupt, never half read.
func TestMCTRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 0))
	tab := ring.RandomTable(rng, 300, 5, 7)
	plain := ring.BlobBytes(tab)
	tab.MCT = map[uint64]forwarding.ServerID{}
	for range 500 {
		tab.MCT[rng.Uint64()] = forwarding.ServerID(1025 + rng.IntN(6))
	}
	raw := ring.BlobBytes(tab)
	if !bytes.Equal(raw[:len(plain)], plain) || len(raw) != len(plain)+4+500*mctRecord {
		t.Fatalf("blob with MCT: %d bytes, without %d: the MCT section is not a pure suffix", len(raw), len(plain))
	}
	got, err := ring.UnmarshalBlob(7, raw)
	if err != nil || !reflect.DeepEqual(got.MCT, tab.MCT) {
		t.Fatalf("blob: %v, %d entries back of %d", err, len(got.MCT), len(tab.MCT))
	}
	d := &forwarding.Delta{Generation: 8, Servers: []forwarding.ServerChange{}, Buckets: []forwarding.BucketChange{{Index: 3, Bucket: forwarding.Bucket{Current: 1026}}},
		MCT: []forwarding.MCTChange{{Sig: 1, Server: 1025}, {Sig: 2, Remove: true}, {Sig: 1 << 63, Server: 1027}}}
	back, err := ring.UnmarshalDelta(8, ring.DeltaBytes(d))
	if err != nil || !reflect.DeepEqual(back, d) {
		t.Fatalf("delta: %v\n got %+v\nwant %+v", err, back, d)
	}
	noMCT := &forwarding.Delta{Generation: 8, Buckets: d.Buckets}
	if a, b := ring.DeltaBytes(noMCT), ring.DeltaBytes(d); !bytes.Equal(b[:len(a)], a) {
		t.Fatal("a delta's MCT section changes what comes before it")
	}
	for _, cut := range []int{1, 5, mctRecord} {
		raw := ring.DeltaBytes(d)
		if _, err := ring.UnmarshalDelta(8, raw[:len(raw)-cut]); !errors.Is(err, ring.ErrCorrupt) {
			t.Errorf("MCT section short by %d: %v", cut, err)
		}
	}
	bad := ring.DeltaBytes(d)
	bad[len(bad)-2] = 7 // op of the last record
	if _, err := ring.UnmarshalDelta(8, bad); !errors.Is(err, ring.ErrCorrupt) {
		t.Errorf("MCT record with op 7: %v", err)
	}
}
