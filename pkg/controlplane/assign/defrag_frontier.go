package assign

import (
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// frontierCycles finds cycles made only of frontier moves: misplaced
// buckets next to a bucket their target owner already owns. Moving such a
// bucket extends the receiver's run and takes the bucket from the end of
// the giver's run, so it never adds a range rule; chains of them shift
// ranges toward their targets from the boundaries inward. The frontier
// graph (giver → receiver) is not balanced like the full misplaced graph,
// so the walk backs out of servers with no frontier bucket left to give.
// Buckets for which skip is true are left out.
func (p *DefragPlan) frontierCycles(owner []forwarding.ServerID, budget []int, skip func(i int) bool) [][]uint32 {
	n := len(owner)
	frontier := func(i int) bool {
		t := p.target[i]
		return owner[i] != t && budget[owner[i]] > 0 && !skip(i) &&
			(i > 0 && owner[i-1] == t || i+1 < n && owner[i+1] == t)
	}
	// Frontier buckets grouped by owner (counting sort).
	next := make([]uint32, idSpace+1)
	for i := range n {
		if frontier(i) {
			next[owner[i]+1]++
		}
	}
	for id := 1; id <= idSpace; id++ {
		next[id] += next[id-1]
	}
	if next[idSpace] == 0 {
		return nil
	}
	end := slices.Clone(next[1:])
	out := make([]uint32, next[idSpace])
	fill := slices.Clone(next[:idSpace])
	for i := range n {
		if frontier(i) {
			out[fill[owner[i]]] = uint32(i)
			fill[owner[i]]++
		}
	}
	return walkCycles(next[:idSpace], end, out, p.target)
}

// walkCycles splits a graph into simple cycles: server s's out-edges are
// the buckets out[next[s]:end[s]], each leading to target[bucket]. It walks
// from server to server keeping the current path; reaching a server on the
// path closes a cycle, which is cut off, and the walk goes on from that
// server; a server with no edge left is backed out of (its incoming edge is
// dropped). Cycles come shortest first.
func walkCycles(next, end, out []uint32, target []forwarding.ServerID) [][]uint32 {
	onPath := make([]int32, idSpace) // position+1 on the path, 0 if not on it
	var cycles [][]uint32
	var path []forwarding.ServerID // edges[k] leads from path[k] to path[k+1]
	var edges []uint32
	for s := range idSpace {
		for next[s] < end[s] {
			path, edges = append(path[:0], forwarding.ServerID(s)), edges[:0]
			onPath[s] = 1
			for len(path) > 0 {
				x := path[len(path)-1]
				if next[x] == end[x] {
					onPath[x] = 0
					path = path[:len(path)-1]
					if len(edges) > 0 {
						edges = edges[:len(edges)-1]
					}
					continue
				}
				e := out[next[x]]
				next[x]++
				y := target[e]
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
