package controller

import (
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// HoldFunc reports whether server id still holds established connections
// of bucket in the instance, so that its entry in the bucket's history must
// outlive the chaining window (issue 10.2: chaining as long as connections
// live). The controller consults it only for entries whose window is past
// its half; it must answer from what it already knows (it runs inside a
// reconcile) and must itself bound how long it holds (a maximum hold), since
// every true answer keeps the entry and re-stamps the bucket's change time.
type HoldFunc func(instance string, id forwarding.ServerID, bucket uint32) bool

// histories maintains the bucket histories of one Beamer instance: the one
// place where they are built, for moves and for the passage of time.
//
// Rules (docs/wire-format.md, "Bucket history"):
//   - a move from X to Y: History = dedupe([X] + old History) minus Y,
//     minus dropped servers, cut to K entries (the oldest go first);
//   - an entry whose server is dropped (down: failed health checks) leaves
//     every history at once: chaining to a dead server would lose the packet
//     before the older owners behind it in the list could be tried. Entries
//     of other servers stay, whoever the bucket's owner is and whatever
//     happens to it (a health failure of the new owner erases nothing);
//   - when the window since Changed is over, entries leave the history,
//     except held ones; while an entry is held its bucket's Changed is
//     re-stamped to now once the window is half gone, so that agents, which
//     chain only within the window after the highest change time they saw,
//     keep chaining to it without a gap;
//   - a history longer than K (K lowered in the config) is cut to K.
//
// Removed servers are not pruned here: the controller keeps a removed server
// retired for as long as some history names it, and removes it after.
type histories struct {
	instance string
	k        int
	window   uint32
	now      uint32
	dropped  func(forwarding.ServerID) bool // down: no longer chained to
	hold     HoldFunc                       // nil: nothing is held
}

// moved is the bucket after assign moved bucket index from old.Current to
// to.Current (to.Changed is the time of the move).
func (h *histories) moved(index uint32, old, to forwarding.Bucket) forwarding.Bucket {
	out := forwarding.Bucket{Current: to.Current, Changed: to.Changed}
	if to.Current == forwarding.NoServer {
		return out // an unowned bucket chains nowhere
	}
	candidates := append([]forwarding.ServerID{old.Current}, old.History[:old.History.Len()]...)
	n := 0
	for _, id := range candidates {
		if n == h.k {
			break
		}
		if id == forwarding.NoServer || id == to.Current || h.dropped(id) || slices.Contains(out.History[:n], id) {
			continue
		}
		out.History[n] = id
		n++
	}
	return out
}

// aged is the bucket (not moved in this generation) after time passed:
// dropped and expired entries gone, held entries kept and the change time
// re-stamped when due, the history cut to K. It returns b itself when
// nothing changes.
func (h *histories) aged(index uint32, b forwarding.Bucket) forwarding.Bucket {
	n := b.History.Len()
	if n == 0 {
		return b
	}
	expired := h.now >= b.Changed+h.window || b.Changed+h.window < b.Changed // overflow: far future is bogus
	halfGone := h.now >= b.Changed+h.window/2
	out := forwarding.Bucket{Current: b.Current, Changed: b.Changed}
	kept, held := 0, false
	for _, id := range b.History[:n] {
		if kept == h.k || h.dropped(id) {
			continue
		}
		isHeld := halfGone && h.hold != nil && h.hold(h.instance, id, index)
		if expired && !isHeld {
			continue
		}
		held = held || isHeld
		out.History[kept] = id
		kept++
	}
	if held {
		out.Changed = h.now
	}
	return out
}

// plan turns assign's moves (each naming, in History[0], the owner the
// bucket moved from) into the bucket changes of the next generation, and
// ages the histories of the buckets that did not move.
func (h *histories) plan(buckets []forwarding.Bucket, moves []forwarding.BucketChange) []forwarding.BucketChange {
	moved := make(map[uint32]bool, len(moves))
	out := make([]forwarding.BucketChange, 0, len(moves))
	for _, m := range moves {
		moved[m.Index] = true
		out = append(out, forwarding.BucketChange{Index: m.Index, Bucket: h.moved(m.Index, buckets[m.Index], m.Bucket)})
	}
	for i, b := range buckets {
		if moved[uint32(i)] {
			continue
		}
		if nb := h.aged(uint32(i), b); nb != b {
			out = append(out, forwarding.BucketChange{Index: uint32(i), Bucket: nb})
		}
	}
	return out
}
