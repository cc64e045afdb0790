package migration

import (
	"math/rand/v2"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Algorithm 1 keeps polling while rounds bring new signatures, stops after
// the first round that brings none, and respects maxRounds (T_limit).
func TestMigrateRounds(t *testing.T) {
	arrivals := [][]uint64{{1, 2, 3}, {4}, {5, 6}, {}, {7}}
	i := 0
	seen := map[uint64]forwarding.ServerID{}
	poll := func() (map[uint64]forwarding.ServerID, error) {
		for _, s := range arrivals[i] {
			seen[s] = 9
		}
		i++
		return seen, nil
	}
	got, rounds, err := Migrate(poll, 10)
	if err != nil || len(got) != 6 || len(rounds) != 4 || rounds[3].New != 0 || rounds[1].New != 1 || rounds[2].New != 2 {
		t.Fatalf("got %d signatures in rounds %v (%v); want 6 in [3 1 2 0]", len(got), rounds, err)
	}
	late, _ := Final(poll, got) // signature 7 arrived after the last round
	if len(late) != 1 || late[7] != 9 {
		t.Fatalf("final round: %v, want signature 7", late)
	}
	i, seen = 0, map[uint64]forwarding.ServerID{}
	if _, rounds, _ := Migrate(poll, 2); len(rounds) != 2 {
		t.Fatalf("maxRounds 2: %d rounds", len(rounds))
	}
}

// Algorithm 2 gives up the cheapest bins of an over-full server; random
// gives up some; bins of a leaving server all move; quotas are met.
func TestMovesChooseCheapest(t *testing.T) {
	buckets := make([]forwarding.Bucket, 12)
	for i := range buckets {
		buckets[i].Current = 1025 + forwarding.ServerID(i%2) // 6 bins each
	}
	servers := []assign.Server{{ID: 1025, Weight: 1}, {ID: 1026, Weight: 1}, {ID: 1027, Weight: 1}}
	cost := func(owner forwarding.ServerID) map[uint32]float64 {
		w := map[uint32]float64{}
		for i := range 12 {
			w[uint32(i)] = float64(100 - i) // higher bins cheaper
		}
		return w
	}
	moves := Moves(buckets, servers, cost, ByLoad, nil)
	if len(moves) != 4 {
		t.Fatalf("%d moves, want 4 (two from each to the new server)", len(moves))
	}
	for _, m := range moves {
		if m.Bucket.Current != 1027 || m.Index < 8 {
			t.Errorf("move %+v: want the cheapest bins (8–11) to 1027", m)
		}
	}
	rnd := Moves(buckets, servers, cost, Random, rand.New(rand.NewPCG(1, 2)))
	if len(rnd) != 4 {
		t.Fatalf("random: %d moves", len(rnd))
	}
	leave := Moves(buckets, servers[1:], cost, ByLoad, nil)
	n := 0
	for _, m := range leave {
		if buckets[m.Index].Current == 1025 {
			n++
		}
		if m.Bucket.Current == 1025 {
			t.Errorf("bin %d given to the leaving server", m.Index)
		}
	}
	if n != 6 {
		t.Fatalf("%d of the leaving server's 6 bins moved", n)
	}
}

// The simulations reproduce §4's closed forms on small runs: each round of
// Algorithm 1 brings δ/ρ of the previous one, and a bin migrates its share
// of the live connections.
func TestSimulationsMatchAnalysis(t *testing.T) {
	p := Fig7(5000, 10000, 100, 50, 1)
	if r := p.MeanNew[1] / p.MeanNew[0]; r < 0.018 || r > 0.022 {
		t.Errorf("round 2 / round 1 = %.4f, want δ/ρ = 0.02", r)
	}
	_, mean, per := Fig6(SimOptions{Scale: 1000, Duration: 120}, 120, 1, 10, 1)
	if per < 0.3 || per > 0.8 {
		t.Errorf("migrated per update %.2f at 1/1000 of the rate, want ≈ 0.55", per)
	}
	if mean <= 0 || mean > 0.3 {
		t.Errorf("mean %% in MCT %.4f at 120 updates/min, want ≈ 0.067", mean)
	}
	if s := SecondsBetweenCollisions(1e6, 5, 48); s < 22 || s > 24 {
		t.Errorf("§5.3: %.1f s between collisions, paper 23 s", s)
	}
}
