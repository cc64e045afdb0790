package assign

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

const a, b, c, d = forwarding.ServerID(1025), forwarding.ServerID(1026), forwarding.ServerID(1027), forwarding.ServerID(1028)

func table(owners ...forwarding.ServerID) []forwarding.Bucket {
	t := make([]forwarding.Bucket, len(owners))
	for i, o := range owners {
		t[i].Current = o
	}
	return t
}

func apply(t []forwarding.Bucket, changes []forwarding.BucketChange) {
	for _, ch := range changes {
		t[ch.Index] = ch.Bucket
	}
}

func TestRebalanceGolden(t *testing.T) {
	cases := []struct {
		name    string
		start   []forwarding.Bucket
		servers []Server
		want    []forwarding.ServerID
		moves   int
	}{
		{"fresh table, two equal servers", make([]forwarding.Bucket, 8),
			[]Server{{a, 1}, {b, 1}}, []forwarding.ServerID{a, a, a, a, b, b, b, b}, 8},
		{"weights 1:3", make([]forwarding.Bucket, 8),
			[]Server{{a, 1}, {b, 3}}, []forwarding.ServerID{a, a, b, b, b, b, b, b}, 8},
		{"server removed: its buckets split, nobody else moves", table(a, a, b, b, c, c),
			[]Server{{a, 1}, {c, 1}}, []forwarding.ServerID{a, a, a, c, c, c}, 2},
		{"server drained by weight 0", table(a, a, b, b, c, c),
			[]Server{{a, 1}, {b, 0}, {c, 1}}, []forwarding.ServerID{a, a, a, c, c, c}, 2},
		{"every other server removed: neighbours absorb whole ranges", table(a, a, b, b, c, c, d, d),
			[]Server{{b, 1}, {d, 1}}, []forwarding.ServerID{b, b, b, b, d, d, d, d}, 4},
		{"server added takes the tails of the others", table(a, a, a, b, b, b),
			[]Server{{a, 1}, {b, 1}, {c, 1}}, []forwarding.ServerID{a, a, c, b, b, c}, 2},
		{"already balanced: no change", table(a, b, a, b),
			[]Server{{a, 1}, {b, 1}}, []forwarding.ServerID{a, b, a, b}, 0},
		{"remainder stays with the server holding it", table(a, a, a, b, b),
			[]Server{{a, 1}, {b, 1}}, []forwarding.ServerID{a, a, a, b, b}, 0},
		{"no positive weight: everything unowned", table(a, b),
			[]Server{{a, 0}}, []forwarding.ServerID{0, 0}, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buckets := slices.Clone(tc.start)
			ch := Rebalance(buckets, tc.servers, 77)
			apply(buckets, ch)
			if got := Owners(buckets); !slices.Equal(got, tc.want) {
				t.Errorf("owners %v, want %v", got, tc.want)
			}
			if len(ch) != tc.moves {
				t.Errorf("%d changes, want %d", len(ch), tc.moves)
			}
			for _, x := range ch {
				if x.Bucket.Changed != 77 || x.Bucket.History[0] != tc.start[x.Index].Current && x.Bucket.Current != forwarding.NoServer {
					t.Errorf("change %+v: want Previous %d and Changed 77", x, tc.start[x.Index].Current)
				}
			}
		})
	}
}

func TestRebalanceMovesOldestFirst(t *testing.T) {
	buckets := table(a, a, a, a)
	buckets[0].Changed, buckets[1].Changed, buckets[2].Changed, buckets[3].Changed = 50, 10, 0, 30
	apply(buckets, Rebalance(buckets, []Server{{a, 1}, {b, 1}}, 99))
	if got, want := Owners(buckets), []forwarding.ServerID{a, b, b, a}; !slices.Equal(got, want) {
		t.Fatalf("owners %v, want %v (the two longest-held buckets move)", got, want)
	}
}

func TestRebalancePanicsOnBadServers(t *testing.T) {
	for _, s := range [][]Server{{{a, 1}, {a, 2}}, {{5, 1}}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Rebalance(%v) did not panic", s)
				}
			}()
			Rebalance(make([]forwarding.Bucket, 3), s, 0)
		}()
	}
}

// checkRebalance verifies every invariant Rebalance promises for one step
// from before (ownership) to after, and returns after.
func checkRebalance(t *testing.T, before []forwarding.Bucket, servers []Server, now uint32) []forwarding.Bucket {
	t.Helper()
	ch := Rebalance(before, servers, now)
	if again := Rebalance(before, servers, now); !slices.Equal(ch, again) {
		t.Fatal("not deterministic")
	}
	after := slices.Clone(before)
	apply(after, ch)
	var total uint64
	weight := map[forwarding.ServerID]uint64{}
	for _, s := range servers {
		total += uint64(s.Weight)
		weight[s.ID] = uint64(s.Weight)
	}
	oldCount, newCount := map[forwarding.ServerID]int{}, map[forwarding.ServerID]int{}
	for i := range before {
		oldCount[before[i].Current]++
		newCount[after[i].Current]++
	}
	for i, x := range ch {
		if i > 0 && ch[i-1].Index >= x.Index {
			t.Fatal("changes not sorted by distinct index")
		}
		old := before[x.Index]
		if x.Bucket.Current == old.Current || x.Bucket.Changed != now {
			t.Fatalf("useless or unstamped change %+v of %+v", x, old)
		}
		if x.Bucket.Current != forwarding.NoServer && x.Bucket.History[0] != old.Current {
			t.Fatalf("change %+v does not name old owner %d", x, old.Current)
		}
		if newCount[old.Current] >= oldCount[old.Current] {
			t.Fatalf("bucket %d taken from %d, which did not shrink", x.Index, old.Current)
		}
	}
	moves := 0
	for id, n := range oldCount {
		moves += max(0, n-newCount[id])
	}
	if moves != len(ch) {
		t.Fatalf("%d changes, but only %d buckets had to move", len(ch), moves)
	}
	for id, n := range newCount {
		if total == 0 {
			if id != forwarding.NoServer {
				t.Fatalf("no positive weight, yet %d owns %d buckets", id, n)
			}
			continue
		}
		share := uint64(len(before)) * weight[id]
		lo, hi := share/total, (share+total-1)/total
		if uint64(n) < lo || uint64(n) > hi {
			t.Fatalf("server %d (weight %d) owns %d buckets, share is %d–%d", id, weight[id], n, lo, hi)
		}
	}
	if again := Rebalance(after, servers, now+1); len(again) != 0 {
		t.Fatalf("not at a fixed point: a second run moves %d buckets", len(again))
	}
	// The buckets a server gave away are its longest-held ones.
	for id := range oldCount {
		var gaveNewest, keptOldest uint32 = 0, ^uint32(0)
		for i := range before {
			if before[i].Current != id {
				continue
			}
			if after[i].Current != id {
				gaveNewest = max(gaveNewest, before[i].Changed)
			} else {
				keptOldest = min(keptOldest, before[i].Changed)
			}
		}
		if gaveNewest > keptOldest {
			t.Fatalf("server %d gave a bucket held since %d but kept one held since %d", id, gaveNewest, keptOldest)
		}
	}
	return after
}

// TestRebalanceRandomSequences applies random adds, removals, drains and
// weight changes and checks all invariants after each step.
func TestRebalanceRandomSequences(t *testing.T) {
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 1))
		buckets := make([]forwarding.Bucket, 1+r.IntN(600))
		var servers []Server
		next := forwarding.MinServerID
		for step := range 30 {
			switch op := r.IntN(10); {
			case op < 4 || len(servers) == 0:
				for range 1 + r.IntN(5) {
					servers = append(servers, Server{next, uint32(1 + r.IntN(4))})
					next += forwarding.ServerID(1 + r.IntN(3))
				}
			case op < 6:
				i := r.IntN(len(servers))
				servers = slices.Delete(servers, i, i+1)
			case op < 8:
				servers[r.IntN(len(servers))].Weight = uint32(r.IntN(5))
			default:
				r.Shuffle(len(servers), func(i, j int) { servers[i], servers[j] = servers[j], servers[i] })
			}
			t.Run(fmt.Sprintf("seed%d/step%d", seed, step), func(t *testing.T) {
				buckets = checkRebalance(t, buckets, servers, uint32(1000+step))
			})
		}
	}
}

func TestFragmentation(t *testing.T) {
	cases := []struct {
		owners []forwarding.ServerID
		want   float64
	}{
		{nil, 0},
		{[]forwarding.ServerID{0, 0}, 0},
		{[]forwarding.ServerID{a, a, b, b}, 1},
		{[]forwarding.ServerID{a, b, a, b}, 2},
		{[]forwarding.ServerID{a, 0, a, b}, 1.5},
		{[]forwarding.ServerID{a, b, c, a}, 4.0 / 3},
	}
	for _, tc := range cases {
		if got := Fragmentation(table(tc.owners...)); got != tc.want {
			t.Errorf("Fragmentation(%v) = %v, want %v", tc.owners, got, tc.want)
		}
		if got, want := RangeRules(tc.owners), int(tc.want*float64(distinctOwners(tc.owners))+0.5); got != want {
			t.Errorf("RangeRules(%v) = %d, want %d", tc.owners, got, want)
		}
	}
}

func distinctOwners(t []forwarding.ServerID) int {
	m := map[forwarding.ServerID]bool{}
	for _, o := range t {
		if o != 0 {
			m[o] = true
		}
	}
	return len(m)
}
