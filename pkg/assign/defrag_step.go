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
// server on a cycle has moved fewer than MaxMoves buckets in this step.
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
	var changes []forwarding.BucketChange
	for _, cyc := range cycles {
		fits := true
		for _, i := range cyc {
			if budget[buckets[i].Current] == 0 {
				fits = false
				break
			}
		}
		if !fits {
			continue
		}
		for _, i := range cyc {
			budget[buckets[i].Current]--
			changes = append(changes, forwarding.BucketChange{Index: i, Bucket: forwarding.Bucket{
				Current: p.target[i], Previous: buckets[i].Current, Changed: now}})
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
