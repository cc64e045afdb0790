package ring_test

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// A payload that goes on past the last section of the strategies built in
// (a section of a strategy this build lacks, e.g. a sixth strategy's from
// a newer controller) is a clear error, ErrUnknownSection inside
// ErrCorrupt, naming the last section this build reads: never a panic and
// never a table read without it.
func TestUnknownSectionRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 0))
	tab := ring.RandomTable(rng, 64, 3, 7)
	tab.MCT = map[uint64]forwarding.ServerID{1: 1025}
	tab.Cheetah = &forwarding.CheetahState{Keys: cookie.Keys{Current: 0, Keys: [2]cookie.Key{{1, 2, 3, 4}}}}
	raw := ring.BlobBytes(tab)
	if _, err := ring.UnmarshalBlob(7, raw); err != nil {
		t.Fatal(err)
	}
	third := append(raw[:len(raw):len(raw)], 1, 0, 0, 0, 0xaa)
	_, err := ring.UnmarshalBlob(7, third)
	if !errors.Is(err, ring.ErrUnknownSection) || !errors.Is(err, ring.ErrCorrupt) ||
		!strings.Contains(err.Error(), "5 bytes after the last section this build reads (section 2 (cheetah keys and loads))") {
		t.Fatalf("blob with a third section: %v", err)
	}
	d := &forwarding.Delta{Generation: 8, Cheetah: tab.Cheetah}
	raw = ring.DeltaBytes(d)
	if _, err := ring.UnmarshalDelta(8, append(raw, 0)); !errors.Is(err, ring.ErrUnknownSection) {
		t.Fatalf("delta with a third section: %v", err)
	}
}
