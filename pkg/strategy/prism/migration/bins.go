package migration

import (
	"math/rand/v2"
	"slices"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Choice says how Moves picks the bins an over-full server gives up.
type Choice int

const (
	// ByLoad is Algorithm 2: the bins of least expected MCT load W(bin).
	ByLoad Choice = iota
	// Random picks them at random: the paper's baseline.
	Random
)

// Moves decides which bins change owner so that every live server owns its
// weighted quota (assign.Quotas): bins of servers that are not live (removed,
// down, weight 0) all move; an over-full server gives up its excess bins,
// chosen by Algorithm 2 (least load(bin), the expected MCT load of
// migrating it) or at random; freed bins go to under-full servers, lowest
// bin to the lowest id first. load may be nil (every bin costs 0). rng is
// used only by Random.
func Moves(buckets []forwarding.Bucket, servers []assign.Server, load func(owner forwarding.ServerID) map[uint32]float64, how Choice, rng *rand.Rand) []forwarding.BucketChange {
	owned := make([]uint32, assign.IDSpace)
	byOwner := map[forwarding.ServerID][]uint32{}
	for i, b := range buckets {
		owned[b.Current]++
		byOwner[b.Current] = append(byOwner[b.Current], uint32(i))
	}
	quota := assign.Quotas(len(buckets), servers, owned)
	live := map[forwarding.ServerID]bool{}
	for _, s := range servers {
		if s.Weight > 0 {
			live[s.ID] = true
		}
	}
	var freed []uint32
	for _, owner := range sortedOwners(byOwner) {
		bins := byOwner[owner]
		if owner == forwarding.NoServer || !live[owner] {
			freed = append(freed, bins...)
			continue
		}
		excess := len(bins) - int(quota[owner])
		if excess <= 0 {
			continue
		}
		switch how {
		case Random:
			rng.Shuffle(len(bins), func(i, j int) { bins[i], bins[j] = bins[j], bins[i] })
		default:
			var w map[uint32]float64
			if load != nil {
				w = load(owner)
			}
			bins = ChooseBins(bins, w, len(bins))
		}
		freed = append(freed, bins[:excess]...)
	}
	slices.Sort(freed)
	var moves []forwarding.BucketChange
	ids := make([]forwarding.ServerID, 0, len(servers))
	for _, s := range servers {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	k := 0
	for _, id := range ids {
		for owned[id] < quota[id] && k < len(freed) {
			moves = append(moves, forwarding.BucketChange{Index: freed[k], Bucket: forwarding.Bucket{Current: id}})
			owned[id]++
			k++
		}
	}
	// Without any live server the freed bins keep their owner (fail open).
	return moves
}

func sortedOwners(m map[forwarding.ServerID][]uint32) []forwarding.ServerID {
	out := make([]forwarding.ServerID, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// ChooseBins is Algorithm 2: the n candidate bins of least expected MCT
// load w (ties: lowest bin first). It sorts candidates in place.
func ChooseBins(candidates []uint32, w map[uint32]float64, n int) []uint32 {
	slices.SortStableFunc(candidates, func(a, b uint32) int {
		switch {
		case w[a] < w[b]:
			return -1
		case w[a] > w[b]:
			return 1
		}
		return int(a) - int(b)
	})
	return candidates[:min(n, len(candidates))]
}

// ExpectedStay is how long a signature of the given age is expected to
// stay in the MCT when connections last lifetime on average: T − age,
// never negative (Appendix A's W(bin) sums it over a bin).
func ExpectedStay(lifetime, age float64) float64 { return max(lifetime-age, 0) }
