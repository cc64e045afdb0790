package assign

import (
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Step performs one iteration of defragmentation and returns its bucket
// changes (sorted by index, Previous = old owner, Changed = now); none once
// Done. It returns an error wrapping ErrDefrag if the table no longer has
// the bucket counts the plan was made for (a server was added, removed or
// reweighted since): plan again.
//
// Moves are made in closed cycles — A gives a bucket to B, B one to C, …, Z
// one to A — so every server gains exactly as many buckets as it loses and
// the balance Rebalance established holds at every step. The misplaced
// buckets form a graph (owner → target owner) in which every server has as
// many out-edges as in-edges, so it splits entirely into such cycles. Step
// splits it into simple cycles and takes them, shortest first, while every
// server on a cycle has moved fewer than MaxMoves buckets in this step and
// the cycle does not increase the number of range rules (a move of a bucket
// next to the receiver's range merges; a partial move elsewhere would split
// ranges — e.g. when the target shifts a run of servers by a few buckets,
// their boundary buckets must move before the inner ones). Only when no
// cycle qualifies does a step take cycles that add rules.
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
	cycles := p.cycles(buckets)
	budget := make([]int, idSpace)
	for i := range budget {
		budget[i] = p.params.MaxMoves
	}
	owner := Owners(buckets) // as this step's accepted cycles leave it
	var changes []forwarding.BucketChange
	// First pass: only cycles that add no range rule, so a data plane's
	// rule count never grows on the way to the target. If none qualifies,
	// take any that fits, so every step makes progress.
	for _, anyCycle := range []bool{false, true} {
		for _, cyc := range cycles {
			if !fits(cyc, owner, budget) {
				continue
			}
			if !p.tryCycle(cyc, owner, anyCycle) {
				continue
			}
			for _, i := range cyc {
				budget[buckets[i].Current]--
				changes = append(changes, forwarding.BucketChange{Index: i, Bucket: forwarding.Bucket{
					Current: p.target[i], Previous: buckets[i].Current, Changed: now}})
			}
		}
		if len(changes) > 0 {
			break
		}
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

	onPath := make([]int32, idSpace) // position+1 on the path, 0 if not on it
	var cycles [][]uint32
	var path []forwarding.ServerID // servers; edges[k] leads from path[k] to path[k+1]
	var edges []uint32
	for s := range idSpace {
		for next[s] < end[s] {
			path, edges = append(path[:0], forwarding.ServerID(s)), edges[:0]
			onPath[s] = 1
			for len(path) > 0 {
				x := path[len(path)-1]
				if next[x] == end[x] { // only the start can run dry: balance
					onPath[x] = 0
					path = path[:len(path)-1]
					continue
				}
				e := out[next[x]]
				next[x]++
				y := p.target[e]
				edges = append(edges, e)
				if k := onPath[y]; k > 0 {
					cycles = append(cycles, slices.Clone(edges[k-1:]))
					for _, z := range path[k:] {
						onPath[z] = 0
					}
					path, edges = path[:k], edges[:k-1]
					continue
				}
				path = append(path, y)
				onPath[y] = int32(len(path))
			}
		}
	}
	slices.SortStableFunc(cycles, func(x, y []uint32) int { return len(x) - len(y) })
	return cycles
}

func fits(cyc []uint32, owner []forwarding.ServerID, budget []int) bool {
	for _, i := range cyc {
		if budget[owner[i]] == 0 {
			return false
		}
	}
	return true
}

// tryCycle applies cyc to owner unless that would add range rules and
// force is false; it reports whether it applied it.
func (p *DefragPlan) tryCycle(cyc []uint32, owner []forwarding.ServerID, force bool) bool {
	const checked = 64
	if len(cyc) > checked {
		if force {
			for _, i := range cyc {
				owner[i] = p.target[i]
			}
		}
		return force // too long to be worth checking
	}
	// A change of owner[i] can only change whether i and i+1 start a run.
	var posBuf [2 * checked]uint32
	pos := posBuf[:0]
	for _, i := range cyc {
		for _, q := range []uint32{i, i + 1} {
			if int(q) < len(owner) && !slices.Contains(pos, q) {
				pos = append(pos, q)
			}
		}
	}
	var saved [checked]forwarding.ServerID
	delta := -runStarts(owner, pos)
	for k, i := range cyc {
		saved[k], owner[i] = owner[i], p.target[i]
	}
	if delta += runStarts(owner, pos); delta > 0 && !force {
		for k, i := range cyc {
			owner[i] = saved[k]
		}
		return false
	}
	return true
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
