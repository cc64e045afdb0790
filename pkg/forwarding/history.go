package forwarding

import "slices"

// HistoryRules maintain the bucket histories of one Beamer instance: the
// one place where they are built, for moves and for the passage of time
// (the controller publishes what they give; the Go model's property test
// drives them too).
//
// Rules (docs/wire-format.md, "Bucket history"):
//   - a move from X to Y: History = dedupe([X] + old History) minus Y,
//     servers that failed their health checks (down) moved behind every
//     other entry, cut to K entries (the oldest go first, down ones before
//     them);
//   - a down server stays in the histories, last: a server whose probes
//     fail may still run and hold connections (its service stopped taking
//     new ones, a probe path broke), and those must keep reaching it; put
//     behind the running owners, a server that is really dead can only
//     swallow packets that no running owner claimed — packets of no live
//     connection, which would otherwise have been reset — never those of
//     the owners behind it. Among down servers, those that may be dead
//     (their last probe reached nothing) go behind those that still answer.
//     Entries of other servers stay, whoever the
//     bucket's owner is and whatever happens to it (a health failure of
//     the new owner erases nothing);
//   - when the window since Changed is over, entries leave the history,
//     except held ones; while an entry is held its bucket's Changed is
//     re-stamped to now once the window is half gone, so that agents, which
//     chain only within the window after the highest change time they saw,
//     keep chaining to it without a gap;
//   - a history longer than K (K lowered in the config) is cut to K.
//
// Removed servers are not pruned here: the controller keeps a removed server
// retired for as long as some history names it, and removes it after.
type HistoryRules struct {
	K      int    // previous owners kept at most (Instance.ChainLen)
	Window uint32 // chaining window, seconds
	Now    uint32 // Unix seconds
	// Down reports servers that failed their health checks: chained to
	// after the running ones; nil: none.
	Down func(ServerID) bool
	// Dead reports, among the down servers, those that may be dead (their
	// last probe did not reach them at all): chained to after the down
	// ones that still answer; nil: none.
	Dead func(ServerID) bool
	// Held reports whether server id still holds connections of bucket;
	// nil: nothing is held. Asked only from half the window on.
	Held func(id ServerID, bucket uint32) bool
	// Idle reports entries known to hold no connection of bucket: asked
	// after since (the bucket's Changed, Unix seconds: the entry could take
	// no new connection from then on), the server reported none there.
	// When a move or a lowered K leaves more than K owners, such entries
	// leave first (the oldest of them first), so that an owner that still
	// holds connections stays chained; nil: none known, the oldest leave.
	Idle func(id ServerID, bucket uint32, since uint32) bool
	// Evicted, if set, is told of every entry that leaves a history
	// because of K without being known idle: its connections there, if
	// it has any, break.
	Evicted func(id ServerID, bucket uint32)
}

func (h *HistoryRules) down(id ServerID) bool { return h.Down != nil && h.Down(id) }

// rank orders history entries: running servers, then down ones that still
// answer, then down ones that may be dead.
func (h *HistoryRules) rank(id ServerID) int {
	switch {
	case !h.down(id):
		return 0
	case h.Dead != nil && h.Dead(id):
		return 2
	}
	return 1
}

// downLast returns ids ordered by rank (running, down, maybe dead), each
// group in its order.
func (h *HistoryRules) downLast(ids []ServerID) []ServerID {
	out := make([]ServerID, 0, len(ids))
	for r := range 3 {
		for _, id := range ids {
			if h.rank(id) == r {
				out = append(out, id)
			}
		}
	}
	return out
}

// Moved is the bucket after a move from old.Current to to.Current
// (to.Changed is the time of the move), for a bucket whose index is not
// known: Idle and Evicted are not asked.
func (h *HistoryRules) Moved(old, to Bucket) Bucket {
	return h.move(old, to, nil)
}

// MovedAt is Moved for bucket index: when more than K owners are left,
// the entries Idle knows hold nothing there leave first, and every other
// entry that leaves is told to Evicted.
func (h *HistoryRules) MovedAt(index uint32, old, to Bucket) Bucket {
	return h.move(old, to, &index)
}

func (h *HistoryRules) move(old, to Bucket, index *uint32) Bucket {
	out := Bucket{Current: to.Current, Changed: to.Changed}
	if to.Current == NoServer {
		return out // an unowned bucket chains nowhere
	}
	var ids []ServerID
	for _, id := range h.downLast(append([]ServerID{old.Current}, old.History[:old.History.Len()]...)) {
		if id == NoServer || id == to.Current || slices.Contains(ids, id) {
			continue
		}
		ids = append(ids, id)
	}
	// old.Current leaves ownership now: it is never known idle here.
	ids = h.cut(ids, index, old.Changed, old.Current)
	copy(out.History[:], ids)
	return out
}

// cut returns ids (distinct, in chaining order) cut to K: entries known
// idle in the bucket go first, the oldest of them first, then the oldest
// others — those are told to Evicted. Without an index, the oldest go.
// fresh is an entry that has just left ownership (never idle).
func (h *HistoryRules) cut(ids []ServerID, index *uint32, since uint32, fresh ServerID) []ServerID {
	over := len(ids) - h.K
	if over <= 0 {
		return ids
	}
	drop := make([]bool, len(ids))
	if index != nil && h.Idle != nil {
		for i := len(ids) - 1; i >= 0 && over > 0; i-- {
			if ids[i] != fresh && h.Idle(ids[i], *index, since) {
				drop[i] = true
				over--
			}
		}
	}
	for i := len(ids) - 1; i >= 0 && over > 0; i-- {
		if !drop[i] {
			drop[i] = true
			over--
			if index != nil && h.Evicted != nil {
				h.Evicted(ids[i], *index)
			}
		}
	}
	out := ids[:0:0]
	for i, id := range ids {
		if !drop[i] {
			out = append(out, id)
		}
	}
	return out
}

// Aged is the bucket (not moved in this generation) after time passed:
// expired entries gone, down ones moved last, held entries kept and the change time
// re-stamped when due, the history cut to K. It returns b itself when
// nothing changes.
func (h *HistoryRules) Aged(index uint32, b Bucket) Bucket {
	n := b.History.Len()
	if n == 0 {
		return b
	}
	expired := h.Now >= b.Changed+h.Window || b.Changed+h.Window < b.Changed // overflow: far future is bogus
	halfGone := h.Now >= b.Changed+h.Window/2
	out := Bucket{Current: b.Current, Changed: b.Changed}
	kept, held := 0, false
	for _, id := range h.downLast(b.History[:n]) {
		if kept == h.K {
			continue
		}
		isHeld := halfGone && h.Held != nil && h.Held(id, index)
		if expired && !isHeld {
			continue
		}
		held = held || isHeld
		out.History[kept] = id
		kept++
	}
	if held {
		out.Changed = h.Now
	}
	return out
}

// Plan turns assign's moves (each naming, in History[0], the owner the
// bucket moved from) into the bucket changes of the next generation, and
// ages the histories of the buckets that did not move.
func (h *HistoryRules) Plan(buckets []Bucket, moves []BucketChange) []BucketChange {
	moved := make(map[uint32]bool, len(moves))
	out := make([]BucketChange, 0, len(moves))
	for _, m := range moves {
		moved[m.Index] = true
		out = append(out, BucketChange{Index: m.Index, Bucket: h.MovedAt(m.Index, buckets[m.Index], m.Bucket)})
	}
	for i, b := range buckets {
		if b.History[0] == NoServer || moved[uint32(i)] {
			continue // nothing to age (Aged would return b), or moved above
		}
		if nb := h.Aged(uint32(i), b); nb != b {
			out = append(out, BucketChange{Index: uint32(i), Bucket: nb})
		}
	}
	return out
}
