package ring

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// TestFuzzSeeds keeps the committed seed corpus of ringfuzz.FuzzObject in
// the current format: a blob, a delta, a header alone, a blob of IPv6
// servers and a blob with the strategies' sections. Regenerate with
// BEAMER_WRITE_SEEDS=1 after a format change; otherwise it checks the
// committed seeds still decode as they should.
func TestFuzzSeeds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tab := randomTable(rng, 600, 5, 9)
	blob, _ := encodeObject(meta{kind: KindBlob, incarnation: 7, generation: 9, resync: true}, blobBytes(tab), 1)
	split(blob, len(blob))
	d := nextDelta(rng, tab)
	delta, _ := encodeObject(meta{kind: KindDelta, incarnation: 7, generation: d.Generation}, deltaBytes(d), 1)
	split(delta, len(delta))
	// An IPv6 table's blob, so the fuzzer starts from 20-byte records too.
	blob6, _ := encodeObject(meta{kind: KindBlob, incarnation: 7, generation: 9, resync: true}, blobBytes(v6Table()), 1)
	split(blob6, len(blob6))
	// A blob with the strategies' sections (ringspi), so the fuzzer
	// starts from them too: Prism's MCT, then Cheetah's keys and loads.
	withSections := tab.Clone()
	withSections.MCT = map[uint64]forwarding.ServerID{1: 1025, 1 << 40: 1026}
	withSections.Cheetah = &forwarding.CheetahState{Keys: cookie.Keys{Current: 1, Keys: [2]cookie.Key{{1, 2, 3, 4}, {5, 6, 7, 8}}},
		Loads: map[forwarding.ServerID]uint32{1025: 3, 1026: 9}}
	blobSections, _ := encodeObject(meta{kind: KindBlob, incarnation: 7, generation: 9, resync: true}, blobBytes(withSections), 1)
	split(blobSections, len(blobSections))
	seeds := map[string][]byte{"blob": blob, "delta": delta, "header": blob[:HeaderSize], "blob6": blob6, "blob-sections": blobSections}
	dir := filepath.Join("ringfuzz", "testdata", "fuzz", "FuzzObject")
	for name, obj := range seeds {
		path := filepath.Join(dir, name)
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", obj)
		if os.Getenv("BEAMER_WRITE_SEEDS") != "" {
			os.MkdirAll(dir, 0o755)
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("seed %s: %v (BEAMER_WRITE_SEEDS=1 go test -run TestFuzzSeeds ./pkg/controlplane/ring writes it)", name, err)
		}
		if string(got) != want {
			t.Fatalf("seed %s is not the current format (BEAMER_WRITE_SEEDS=1 go test -run TestFuzzSeeds ./pkg/controlplane/ring rewrites it)", name)
		}
		buckets := uint32(600)
		if name == "blob6" {
			buckets = 4
		}
		if _, _, _, err := CheckObject(obj, buckets, 1<<20); (err == nil) != (name != "header") {
			t.Fatalf("seed %s: %v", name, err)
		}
	}
}
