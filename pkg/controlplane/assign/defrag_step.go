package assign

import (
	"fmt"
	"math"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Step performs one iteration of defragmentation and returns its bucket
// changes (sorted by index, Previous = old owner, Changed = now); none once
// Done. It returns an error wrapping ErrDefrag if the table no longer has
// the bucket counts the plan was made for (a server was added, removed or
// reweighted since): plan again; and ErrDefragStalled if it cannot move
// anything (see below).
//
// Moves are made in closed cycles — A gives a bucket to B, B one to C, …, Z
// one to A — so every server gains exactly as many buckets as it loses and
// the balance Rebalance established holds at every step. Within a step:
//
//  1. Rounds of frontier cycles (see frontierCycles): every move takes a
//     bucket from the end of its owner's run and extends the run of its
//     target owner, so ranges shift toward the target from their
//     boundaries and no rule is added.
//  2. Other cycles of the owner → target graph (which splits entirely into
//     cycles, since every server has as many misplaced buckets as buckets
//     targeted at it), shortest first, that add no rule.
//  3. Cycles that add rules, only while the table keeps at most the number
//     of range rules it had when the plan was made: fragmentation never
//     rises above its starting value, so a hardware data plane with room
//     for the table it has keeps room during the whole run.
//
// Throughout, no server moves more than MaxMoves buckets, and buckets
// inside their chaining window (ChainWindow) are not moved. A step that can
// move nothing under these rules returns ErrDefragStalled: on a mildly
// fragmented table the planned target can need relocating some servers
// whole, which means a new range before their old ones disappear, and the
// starting rule count leaves no room for that (see docs/hashing.md).
func (p *DefragPlan) Step(buckets []forwarding.Bucket, now uint32) ([]forwarding.BucketChange, error) {
	if len(buckets) != len(p.target) {
		return nil, fmt.Errorf("%w: table has %d buckets, plan %d", ErrDefrag, len(buckets), len(p.target))
	}
	counts := make([]uint32, idSpace)
	for _, b := range buckets {
		counts[b.Current]++
	}
	if !slices.Equal(counts, p.counts) {
		return nil, fmt.Errorf("%w: bucket counts changed since the plan was made", ErrDefrag)
	}
	if p.Done(buckets) {
		return nil, nil
	}
	window := p.params.ChainWindow
	busy := func(i int) bool { c := buckets[i].Changed; return c != 0 && c+window > now }
	cycles := p.cycles(buckets)
	budget := make([]int, idSpace)
	for i := range budget {
		budget[i] = p.params.MaxMoves
	}
	owner := Owners(buckets) // as this step's accepted cycles leave it
	rules := RangeRules(owner)
	var changes []forwarding.BucketChange
	take := func(cyc []uint32, allowance int) bool {
		// A cycle of the misplaced graph may share buckets with frontier
		// cycles taken before it; it is stale then.
		if !fits(cyc, owner, budget) || slices.ContainsFunc(cyc, func(i uint32) bool { return busy(int(i)) || owner[i] == p.target[i] }) {
			return false
		}
		delta, ok := p.tryCycle(cyc, owner, allowance)
		if !ok {
			return false
		}
		rules += delta
		for _, i := range cyc {
			budget[buckets[i].Current]--
			changes = append(changes, forwarding.BucketChange{Index: i, Bucket: forwarding.Bucket{
				Current: p.target[i], History: forwarding.Chain{buckets[i].Current}, Changed: now}})
		}
		return true
	}
	// First: rounds of frontier cycles, which shift ranges from their
	// boundaries and add no rule; each round sees the previous one's moves.
	for progress := true; progress; {
		progress = false
		for _, cyc := range p.frontierCycles(owner, budget, busy) {
			progress = take(cyc, 0) || progress
		}
	}
	// Then any cycle of the misplaced graph that adds no rule, then ones
	// that add rules while the table stays within the rule count it had
	// when planned (fragmentation never exceeds its starting value) — or,
	// with AllowRise, any cycle.
	for _, second := range []bool{false, true} {
		for _, cyc := range cycles {
			allowance := 0
			if second {
				allowance = p.rules - rules
				if p.params.AllowRise {
					allowance = math.MaxInt
				}
			}
			take(cyc, allowance)
		}
	}
	if len(changes) == 0 {
		return nil, fmt.Errorf("%w: %d buckets are misplaced, but moving any of them would raise fragmentation above its starting %.3f rules per server or move a bucket inside its chaining window",
			ErrDefragStalled, p.Misplaced(buckets), float64(p.rules)/float64(p.owners))
	}
	slices.SortFunc(changes, func(x, y forwarding.BucketChange) int { return int(x.Index) - int(y.Index) })
	return changes, nil
}

// cycles splits the misplaced buckets into simple cycles of the
// owner → target graph, each given as its bucket indices, shortest first.
// It walks from server to server along unused misplaced buckets, keeping
// the current path; reaching a server already on the path closes a cycle,
// which is cut off and the walk goes on from that server.
func (p *DefragPlan) cycles(buckets []forwarding.Bucket) [][]uint32 {
	// Misplaced buckets grouped by current owner (counting sort).
	next := make([]uint32, idSpace+1)
	for i, b := range buckets {
		if b.Current != p.target[i] {
			next[b.Current+1]++
		}
	}
	for id := 1; id <= idSpace; id++ {
		next[id] += next[id-1]
	}
	end := slices.Clone(next[1:])
	out := make([]uint32, next[idSpace])
	fill := slices.Clone(next[:idSpace])
	for i, b := range buckets {
		if b.Current != p.target[i] {
			out[fill[b.Current]] = uint32(i)
			fill[b.Current]++
		}
	}

	// Within a server, give away first the buckets next to their target
	// owner, then the ends of runs: a cycle taking them shrinks the giver's
	// run instead of splitting it and may extend the receiver's.
	rank := func(i uint32) int {
		o, t := buckets[i].Current, p.target[i]
		left, right := i > 0 && buckets[i-1].Current == o, int(i)+1 < len(buckets) && buckets[i+1].Current == o
		switch {
		case i > 0 && buckets[i-1].Current == t || int(i)+1 < len(buckets) && buckets[i+1].Current == t:
			return 0
		case !left || !right:
			return 1
		}
		return 2
	}
	for s := range idSpace {
		if seg := out[next[s]:end[s]]; len(seg) > 1 {
			slices.SortStableFunc(seg, func(x, y uint32) int { return rank(x) - rank(y) })
		}
	}
	return walkCycles(next[:idSpace], end, out, p.target)
}

func fits(cyc []uint32, owner []forwarding.ServerID, budget []int) bool {
	for _, i := range cyc {
		if budget[owner[i]] == 0 {
			return false
		}
	}
	return true
}

// tryCycle applies cyc to owner if that adds at most allowance range rules
// and returns the change in rules (ok false: not applied).
func (p *DefragPlan) tryCycle(cyc []uint32, owner []forwarding.ServerID, allowance int) (delta int, ok bool) {
	// A change of owner[i] can only change whether i and i+1 start a run.
	pos := make([]uint32, 0, 2*len(cyc))
	for _, i := range cyc {
		pos = append(pos, i)
		if int(i)+1 < len(owner) {
			pos = append(pos, i+1)
		}
	}
	slices.Sort(pos)
	pos = slices.Compact(pos)
	saved := make([]forwarding.ServerID, len(cyc))
	delta = -runStarts(owner, pos)
	for k, i := range cyc {
		saved[k], owner[i] = owner[i], p.target[i]
	}
	if delta += runStarts(owner, pos); delta > allowance {
		for k, i := range cyc {
			owner[i] = saved[k]
		}
		return delta, false
	}
	return delta, true
}

// runStarts counts the positions in pos where a run of owned buckets starts.
func runStarts(owner []forwarding.ServerID, pos []uint32) int {
	n := 0
	for _, q := range pos {
		if owner[q] != forwarding.NoServer && (q == 0 || owner[q-1] != owner[q]) {
			n++
		}
	}
	return n
}
