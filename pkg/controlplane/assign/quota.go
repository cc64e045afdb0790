package assign

import (
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// quotas returns how many of n buckets each server should own: ⌊n·w/W⌋, plus
// one for as many servers as the rounding left buckets over. The paper's
// greedy loop stops when no server is above the average load and none below
// it; with whole buckets that average is rarely reachable, so "the average"
// becomes this integer target, which is within one bucket of the exact
// weighted share of every server (load ≤ ⌈n·w/W⌉).
//
// Which servers get the extra bucket is chosen to move as little as
// possible: first those that already own more than their floor (they would
// otherwise have to give one away), then by the largest fractional share,
// then by id for determinism. Only servers with a non-zero fractional share
// are eligible, so nobody ends above the ceiling of its exact share.
//
// The result is indexed by server id; servers not listed (and weight 0) get
// 0. owned[id] is the number of buckets id owns now.
func quotas(n int, servers []Server, owned []uint32) []uint32 {
	q := make([]uint32, idSpace)
	var total uint64
	for _, s := range servers {
		total += uint64(s.Weight)
	}
	if total == 0 {
		return q
	}
	type extra struct {
		id    forwarding.ServerID
		holds bool   // owns more than its floor already
		rem   uint64 // fractional share, in units of 1/total
	}
	var cands []extra
	left := uint64(n)
	for _, s := range servers {
		share := uint64(n) * uint64(s.Weight)
		q[s.ID] = uint32(share / total)
		left -= share / total
		if rem := share % total; rem > 0 {
			cands = append(cands, extra{s.ID, owned[s.ID] > q[s.ID], rem})
		}
	}
	slices.SortFunc(cands, func(a, b extra) int {
		switch {
		case a.holds != b.holds:
			if a.holds {
				return -1
			}
			return 1
		case a.rem != b.rem:
			if a.rem > b.rem {
				return -1
			}
			return 1
		}
		return int(a.id) - int(b.id)
	})
	for _, c := range cands[:left] {
		q[c.id]++
	}
	return q
}
