package ring

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestNextIncarnationNeverWraps: the next incarnation is max(clock,
// known+1), and one that would lead the clock by more than
// MaxIncarnationLead or not fit 32 bits is refused, never wrapped to 0.
func TestNextIncarnationNeverWraps(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	lead := uint32(MaxIncarnationLead / time.Second)
	for _, c := range []struct {
		name  string
		now   time.Time
		known uint32
		want  uint32 // 0: refused
	}{
		{"clock ahead of known", now, 1_600_000_000, 1_700_000_000},
		{"known at the clock", now, 1_700_000_000, 1_700_000_001},
		{"known at the bound minus one", now, 1_700_000_000 + lead - 1, 1_700_000_000 + lead},
		{"known at the bound", now, 1_700_000_000 + lead, 0},
		{"known 2^32-1", now, math.MaxUint32, 0},
		{"clock before 1970", time.Unix(-5, 0), 0, 1},
		{"clock at the end of 32 bits", time.Unix(math.MaxUint32-10, 0), 0, 0},
	} {
		got, err := nextIncarnation(c.now, c.known)
		if c.want == 0 {
			if !errors.Is(err, ErrIncarnationAhead) {
				t.Errorf("%s: %d, %v; want refused", c.name, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %d, %v; want %d", c.name, got, err, c.want)
		}
	}
}

// TestRepairIgnoresIncarnationBeyondClock: pointers naming incarnation
// 2^32−1 or the clock + 1 day are damage, never a floor; the repair takes
// the table the caller published last and a new incarnation from the
// clock, above what it published.
func TestRepairIgnoresIncarnationBeyondClock(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	ctx := storetest.Context(t)
	for _, inc := range []uint32{math.MaxUint32, uint32(time.Now().Add(24 * time.Hour).Unix())} {
		k, w := newRing(t, 200, WriterOptions{BlobEvery: 1 << 20})
		publish(t, w, rng)
		p := formatPointer(Pair{inc, w.Pair().Generation + 1})
		if err := shared.Commit(ctx, store.Put(k.LatestGen(), p)); err != nil {
			t.Fatal(err)
		}
		w2, rep, err := Repair(ctx, shared, k, WriterOptions{}, w.Pair(), w.Table())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v", rep)
		got := w2.Pair()
		if !w.Pair().Less(got) || int64(got.Incarnation) > time.Now().Add(MaxIncarnationLead).Unix() {
			t.Fatalf("incarnation %d beyond the clock in the store: repair published %v after %v", inc, got, w.Pair())
		}
		tab := w2.Table().Clone()
		tab.Incarnation, tab.Generation = w.Table().Incarnation, w.Table().Generation
		if !reflect.DeepEqual(tab, w.Table()) {
			t.Fatal("the repair did not take the table published last")
		}
	}
}

// TestFollowerRefusesIncarnationAhead: a ring whose incarnation leads the
// mux's clock by more than FollowerIncarnationLead is not loaded, neither
// at a cold start nor while following (the running table stays, the round
// fails with ErrIncarnationAhead, nothing is counted as a refusal); the
// controller's repair at an incarnation from its clock is then loaded.
func TestFollowerRefusesIncarnationAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 32))
	ctx := storetest.Context(t)
	k, w := newRing(t, 200, WriterOptions{BlobEvery: 1 << 20})
	publish(t, w, rng)
	f := NewFollower(shared, k, FollowerOptions{})
	tab, _, err := f.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{table: tab.Clone()}
	ahead := func() time.Time { return time.Now().Add(24 * time.Hour) }
	if _, _, err := Repair(ctx, shared, k, WriterOptions{Now: ahead}, w.Pair(), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.CatchUp(ctx, r); !errors.Is(err, ErrIncarnationAhead) {
		t.Fatalf("following a ring a day ahead: %v", err)
	}
	if !reflect.DeepEqual(r.table, w.Table()) || r.replaces+r.deltas != 0 || f.Status().Refused != 0 {
		t.Fatalf("the follower moved (%d replaces, %d deltas, %d refused)", r.replaces, r.deltas, f.Status().Refused)
	}
	if _, _, err := NewFollower(shared, k, FollowerOptions{}).Load(ctx); !errors.Is(err, ErrIncarnationAhead) {
		t.Fatalf("cold start on a ring a day ahead: %v", err)
	}
	w2, _, err := Repair(ctx, shared, k, WriterOptions{}, w.Pair(), w.Table())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.CatchUp(ctx, r); err != nil {
		t.Fatal(err)
	}
	if r.replaces != 1 || !reflect.DeepEqual(r.table, w2.Table()) {
		t.Fatalf("repair not loaded: %d replaces", r.replaces)
	}
}
