package assign

import (
	"errors"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Defragmentation (Beamer appendix A1). Rebalance keeps the load balanced
// but splits ranges; a hardware data plane needs one range rule per
// contiguous run, so the controller occasionally moves buckets back into
// one range per server. It first computes a target mapping once (PlanDefrag),
// then runs Step once per period — the paper uses the 4-minute daisy-chaining
// window, so buckets moved by one step have finished chaining before the
// next — each step moving at most MaxMoves buckets per server, until the
// fragmentation falls to TargetRate.

// DefragParams are the knobs of defragmentation.
type DefragParams struct {
	// Threshold: defragmentation starts when Fragmentation exceeds it.
	Threshold float64
	// TargetRate is the paper's fr ≥ 1: steps stop once Fragmentation ≤ it.
	TargetRate float64
	// MaxMoves is the paper's bmax ≥ 1: per step, at most this many buckets
	// leave any server (and as many arrive), which bounds the extra
	// daisy-chained traffic a server sees to MaxMoves buckets' worth.
	MaxMoves int
	// ChainWindow, in seconds: a bucket that changed owner less than this
	// long ago is being daisy-chained and is not moved (appendix A1: "we
	// try to avoid migrating buckets that are being daisy chained"); moving
	// it again would cut its previous owner's connections off. 0: no limit.
	ChainWindow uint32
	// AllowRise lets a step add range rules beyond the count the run
	// started with, as the paper's algorithm does: fragmentation may rise
	// for a while, but the run reaches TargetRate from any table. Without
	// it a run never needs more rules than it started with (what a hardware
	// data plane sized for its table wants), and may stall short of the
	// target on a mildly fragmented table. A software mux matches per
	// bucket and has no rule budget.
	AllowRise bool
}

// DefaultDefragParams: start when servers average more than 1.5 rules,
// stop at 1.1, and move at most 10 buckets per server per step — 10% of a
// server's traffic at the paper's 100 buckets per server. The paper leaves
// these values to the operator.
var DefaultDefragParams = DefragParams{Threshold: 1.5, TargetRate: 1.1, MaxMoves: 10}

// ErrDefrag wraps errors of defragmentation.
var ErrDefrag = errors.New("assign: defragmentation")

// ErrDefragStalled (which wraps ErrDefrag) says a step found no move it is
// allowed to make: not done, but nothing to do now.
var ErrDefragStalled = fmt.Errorf("%w stalled", ErrDefrag)

// Validate says what is wrong with p.
func (p DefragParams) Validate() error {
	switch {
	case !(p.TargetRate >= 1):
		return fmt.Errorf("%w: target rate %v must be ≥ 1 (one range per server is the best possible)", ErrDefrag, p.TargetRate)
	case !(p.Threshold >= p.TargetRate):
		return fmt.Errorf("%w: threshold %v must be ≥ target rate %v", ErrDefrag, p.Threshold, p.TargetRate)
	case p.MaxMoves < 1:
		return fmt.Errorf("%w: max moves per server %d must be ≥ 1", ErrDefrag, p.MaxMoves)
	}
	return nil
}

// Needed reports whether buckets are fragmented enough to start.
func (p DefragParams) Needed(buckets []forwarding.Bucket) bool {
	return Fragmentation(buckets) > p.Threshold
}

// DefragPlan is a target mapping in which every server owns one contiguous
// range of as many buckets as it owns now, so reaching it changes nobody's
// load. It stays valid as long as no server's bucket count changes.
type DefragPlan struct {
	params DefragParams
	target []forwarding.ServerID
	counts []uint32 // per id, at planning time
	rules  int      // range rules at planning time: steps never exceed it
	owners int      // servers owning buckets
}

// PlanDefrag computes the target greedily, as in the paper: from offset 0,
// give the next range to the server whose taking it there moves the fewest
// buckets (ties: the larger overlap, then the lower id), then advance past
// it. All buckets must be owned (rebalance first).
func PlanDefrag(buckets []forwarding.Bucket, params DefragParams) (*DefragPlan, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	counts := make([]uint32, idSpace)
	for i, b := range buckets {
		if b.Current == forwarding.NoServer {
			return nil, fmt.Errorf("%w: bucket %d is unowned; rebalance before defragmenting", ErrDefrag, i)
		}
		counts[b.Current]++
	}
	// Unplaced servers by (count, id), consumed from both ends: the
	// smallest is the fallback when no server overlaps the window, the
	// largest bounds the window.
	var order []forwarding.ServerID
	for id, n := range counts {
		if n > 0 {
			order = append(order, forwarding.ServerID(id))
		}
	}
	slices.SortStableFunc(order, func(x, y forwarding.ServerID) int { return int(counts[x]) - int(counts[y]) })
	placed := make([]bool, idSpace)
	overlap := make([]uint32, idSpace)
	lo, hi := 0, len(order)-1
	target := make([]forwarding.ServerID, len(buckets))
	for start := 0; start < len(buckets); {
		for placed[order[lo]] {
			lo++
		}
		for placed[order[hi]] {
			hi--
		}
		end := min(len(buckets), start+int(counts[order[hi]]))
		for p := start; p < end; p++ {
			if o := buckets[p].Current; !placed[o] && p < start+int(counts[o]) {
				overlap[o]++
			}
		}
		best := order[lo]
		better := func(o forwarding.ServerID) bool {
			co, cb := counts[o]-overlap[o], counts[best]-overlap[best]
			return co < cb || co == cb && (overlap[o] > overlap[best] || overlap[o] == overlap[best] && o < best)
		}
		for p := start; p < end; p++ {
			if o := buckets[p].Current; overlap[o] > 0 && better(o) {
				best = o
			}
		}
		for p := start; p < end; p++ {
			overlap[buckets[p].Current] = 0
		}
		placed[best] = true
		n := int(counts[best])
		for p := start; p < start+n; p++ {
			target[p] = best
		}
		start += n
	}
	return &DefragPlan{params: params, target: target, counts: counts, owners: len(order),
		rules: countRuns(len(buckets), func(i int) forwarding.ServerID { return buckets[i].Current })}, nil
}

// Target returns the planned owner of every bucket; do not modify it.
func (p *DefragPlan) Target() []forwarding.ServerID { return p.target }

// Misplaced counts the buckets whose owner differs from the target: what
// reaching the target would still move.
func (p *DefragPlan) Misplaced(buckets []forwarding.Bucket) int {
	n := 0
	for i, b := range buckets {
		if b.Current != p.target[i] {
			n++
		}
	}
	return n
}

// Done reports whether defragmentation has reached its target rate.
func (p *DefragPlan) Done(buckets []forwarding.Bucket) bool {
	return Fragmentation(buckets) <= p.params.TargetRate || p.Misplaced(buckets) == 0
}
