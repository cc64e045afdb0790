package assign

import (
	"cmp"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Rebalance runs the greedy assignment loop of Beamer §4.5 over the current
// bucket ownership and returns the bucket changes it decides, sorted by
// bucket index. Each change names the old owner as Previous (so muxes
// daisy-chain its connections) and now as Changed.
//
// Every server ends with its integer share of the buckets (see quotas):
// servers with weight 0, servers absent from servers, and the unowned
// pseudo-owner (Current == NoServer) end with none. The loop repeatedly
// takes the most overloaded server A and the most underloaded server B, by
// load = buckets/weight, moves the largest number of buckets that keeps A
// not below and B not above its share, and picks from A the buckets that
// have been in A's pool longest (smallest Changed), so buckets still being
// daisy-chained are the last to move again. Among equally old buckets it
// takes A's highest indices first: a contiguous range then shrinks from its
// end and stays one range, and the receiver gets a contiguous block.
//
// Which receiver gets a donor's buckets does not change anyone's final
// load (that is fixed by the quotas), only where ranges end up; so when the
// owner of the bucket next to the donor's outgoing block still needs
// buckets, it gets them instead of the most underloaded server, which keeps
// its range whole (e.g. removing every other server leaves one range each).
//
// Buckets that need not move are never touched; the number of changes is
// exactly the total excess of the donors. If no server has a positive
// weight, every owned bucket becomes unowned. The result is deterministic.
// Rebalance panics if servers fails CheckServers.
func Rebalance(buckets []forwarding.Bucket, servers []Server, now uint32) []forwarding.BucketChange {
	return RebalanceLimited(buckets, servers, now, 0)
}

// RebalanceLimited is Rebalance for a table whose buckets remember at most
// maxHistory previous owners (K; 0: no limit). A bucket whose history is
// full would forget its oldest owner if it moved again, breaking the
// connections that owner still holds, so it does not move while its owner
// stays: only donors that must give everything up (weight 0 or absent:
// removed, down, drained) give such buckets. A donor left with nothing
// else to give stays above its share; the next rebalance, once histories
// have shrunk, completes the move. Among a donor's buckets, the longest
// held go first, then those with the shortest history.
func RebalanceLimited(buckets []forwarding.Bucket, servers []Server, now uint32, maxHistory int) []forwarding.BucketChange {
	mustCheckServers(servers)
	owned := make([]uint32, idSpace)
	for _, b := range buckets {
		owned[b.Current]++
	}
	weight := make([]uint32, idSpace)
	for _, s := range servers {
		weight[s.ID] = s.Weight
	}
	quota := quotas(len(buckets), servers, owned)

	donors := &idHeap{before: func(a, b forwarding.ServerID) bool {
		c := compareLoad(owned[a], weight[a], owned[b], weight[b])
		return c > 0 || c == 0 && a < b
	}}
	receivers := &idHeap{before: func(a, b forwarding.ServerID) bool {
		c := compareLoad(owned[a], weight[a], owned[b], weight[b])
		return c < 0 || c == 0 && a < b
	}}
	for id := range idSpace {
		switch {
		case owned[id] > quota[id]:
			donors.ids = append(donors.ids, forwarding.ServerID(id))
		case owned[id] < quota[id]:
			receivers.ids = append(receivers.ids, forwarding.ServerID(id))
		}
	}
	if len(donors.ids) == 0 {
		return nil
	}
	pool := donorPools(buckets, owned, quota, weight, maxHistory)
	changes := make([]forwarding.BucketChange, 0, excess(owned, quota))
	if len(receivers.ids) == 0 { // nobody may own anything
		for i, b := range buckets {
			if b.Current != forwarding.NoServer {
				changes = append(changes, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Changed: now}})
			}
		}
		return changes
	}
	donors.init()
	receivers.init()
	owner := Owners(buckets) // ownership as the loop changes it
	for donors.Len() > 0 && receivers.Len() > 0 {
		a, b := donors.top(), receivers.top()
		if pool.left(a) == 0 { // only full-history buckets left: they stay
			donors.settle(a, true)
			continue
		}
		if nb := pool.neighbour(a, owner); owned[nb] < quota[nb] {
			b = nb
		}
		n := min(owned[a]-quota[a], quota[b]-owned[b], pool.left(a))
		for _, idx := range pool.take(a, n) {
			owner[idx] = b
			changes = append(changes, forwarding.BucketChange{Index: idx, Bucket: forwarding.Bucket{Current: b, History: forwarding.Chain{a}, Changed: now}})
		}
		owned[a] -= n
		owned[b] += n
		donors.settle(a, owned[a] == quota[a] || pool.left(a) == 0)
		receivers.settle(b, owned[b] == quota[b])
	}
	slices.SortFunc(changes, func(x, y forwarding.BucketChange) int { return int(x.Index) - int(y.Index) })
	return changes
}

// compareLoad compares the loads (buckets/weight) of two servers, weight 0
// counting as infinitely loaded and, between two such, more buckets as more
// loaded.
func compareLoad(ca, wa, cb, wb uint32) int {
	switch {
	case wa == 0 && wb == 0:
		return cmp.Compare(ca, cb)
	case wa == 0:
		return 1
	case wb == 0:
		return -1
	}
	return cmp.Compare(uint64(ca)*uint64(wb), uint64(cb)*uint64(wa))
}

func excess(owned, quota []uint32) int {
	n := 0
	for id := range owned {
		if owned[id] > quota[id] {
			n += int(owned[id] - quota[id])
		}
	}
	return n
}

// pools holds, for each donor, the buckets it may give away, in the order
// it gives them: longest-held first, then shortest history, then highest
// index first.
type pools struct {
	list []uint32 // bucket indices, grouped by donor
	next []uint32 // per id: position in list of the next bucket to give
	end  []uint32 // per id: end of its group
}

func donorPools(buckets []forwarding.Bucket, owned, quota, weight []uint32, maxHistory int) *pools {
	p := &pools{next: make([]uint32, idSpace), end: make([]uint32, idSpace)}
	var size uint32
	for id := range owned {
		if owned[id] > quota[id] {
			p.next[id] = size
			size += owned[id]
			p.end[id] = size
		}
	}
	p.list = make([]uint32, size)
	fill := slices.Clone(p.next)
	for i := len(buckets) - 1; i >= 0; i-- {
		b := &buckets[i]
		c := b.Current
		if owned[c] <= quota[c] {
			continue
		}
		if maxHistory > 0 && weight[c] > 0 && b.History.Len() >= maxHistory {
			continue // its owner stays: moving it would forget an owner
		}
		p.list[fill[c]] = uint32(i)
		fill[c]++
	}
	for id := range owned {
		if owned[id] > quota[id] {
			p.end[id] = fill[id]
		}
	}
	// Unowned buckets have no age and no owner whose range could stay
	// whole; hand them out in index order so a fresh table reads naturally.
	slices.Reverse(p.list[p.next[forwarding.NoServer]:p.end[forwarding.NoServer]])
	for id := 1; id < len(owned); id++ {
		if owned[id] > quota[id] {
			seg := p.list[p.next[id]:p.end[id]]
			// Listed by descending index; order by age, then history
			// length, keeping the index order as the tie-break.
			// Already-sorted input (all equally old) is linear.
			slices.SortFunc(seg, func(x, y uint32) int {
				bx, by := &buckets[x], &buckets[y]
				if bx.Changed != by.Changed {
					if bx.Changed < by.Changed {
						return -1
					}
					return 1
				}
				if lx, ly := bx.History.Len(), by.History.Len(); lx != ly {
					return lx - ly
				}
				return int(y) - int(x)
			})
		}
	}
	return p
}

// left is how many buckets id may still give.
func (p *pools) left(id forwarding.ServerID) uint32 { return p.end[id] - p.next[id] }

// neighbour returns the owner of a bucket adjacent to the next bucket id
// would give away (right side first), or NoServer.
func (p *pools) neighbour(id forwarding.ServerID, owner []forwarding.ServerID) forwarding.ServerID {
	idx := int(p.list[p.next[id]])
	if idx+1 < len(owner) && owner[idx+1] != id {
		return owner[idx+1]
	}
	if idx > 0 && owner[idx-1] != id {
		return owner[idx-1]
	}
	return forwarding.NoServer
}

func (p *pools) take(id forwarding.ServerID, n uint32) []uint32 {
	s := p.list[p.next[id] : p.next[id]+n]
	p.next[id] += n
	return s
}
