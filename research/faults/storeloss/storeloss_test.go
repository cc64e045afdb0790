package storeloss

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

func TestLosesOnlyLossyKeys(t *testing.T) {
	ctx := context.Background()
	st := storetest.EmbeddedT(t)
	lossy := func(k string) bool { return strings.HasPrefix(k, "/lossy/") }
	put := func(k, v string) {
		t.Helper()
		if err := st.Commit(ctx, store.Put(k, []byte(v))); err != nil {
			t.Fatal(err)
		}
	}
	put("/plain/a", "1")

	// Every read lost: the reader never sees the key, then keeps what it saw.
	all, err := Wrap(st, lossy, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	put("/lossy/r", "v1")
	if _, err := all.Get(ctx, "/lossy/r"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("first read with every update lost: %v, want not found", err)
	}
	if it, err := all.Get(ctx, "/plain/a"); err != nil || string(it.Value) != "1" {
		t.Fatalf("a key that is not lossy: %q %v", it.Value, err)
	}
	if all.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1", all.Dropped())
	}

	// Half lost: a reader sees the new value only on some reads, and the
	// old one on the others, never anything else.
	half, err := Wrap(st, lossy, 0.5, 7)
	if err != nil {
		t.Fatal(err)
	}
	// Read until one read got through: from then on a lost read repeats it.
	for i := 0; ; i++ {
		if i == 64 {
			t.Fatal("64 reads in a row lost at p = 0.5")
		}
		before := half.Dropped()
		it, err := half.Get(ctx, "/lossy/r")
		if half.Dropped() == before {
			if err != nil || string(it.Value) != "v1" {
				t.Fatalf("a read that got through: %q %v", it.Value, err)
			}
			break
		}
	}
	put("/lossy/r", "v2")
	seen := map[string]int{}
	const reads = 400
	before := half.Dropped()
	for range reads {
		it, err := half.Get(ctx, "/lossy/r")
		if err != nil {
			t.Fatal(err)
		}
		seen[string(it.Value)]++
	}
	lost := half.Dropped() - before
	// Until the first read of v2 gets through, a lost read repeats v1.
	if seen["v1"]+seen["v2"] != reads || seen["v2"] == 0 {
		t.Fatalf("reads saw %v", seen)
	}
	// 400 draws at p = 0.5: 200 ± 60 is beyond six standard deviations.
	if math.Abs(float64(lost)-reads/2) > 60 {
		t.Fatalf("lost %d of %d reads at p = 0.5", lost, reads)
	}
}

func TestWrapRefusesBadProbability(t *testing.T) {
	for _, p := range []float64{-0.1, 1.5, math.NaN()} {
		if _, err := Wrap(nil, func(string) bool { return true }, p, 1); err == nil {
			t.Errorf("p = %v accepted", p)
		}
	}
}
