package dataplane

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Compact entries that name no server (bpf/include/mux_maps.h).
const (
	bucketNone  = 0
	bucketMoved = 1
)

// Block summaries (bpf/include/mux_maps.h SUMMARY_*): tables of
// summaryMinBuckets buckets or more keep one 16-bit summary per block of
// 1<<summaryShift buckets, the block's owner when all its buckets are that
// server's without history, else 0.
const (
	summaryShift      = 8
	summaryMinBuckets = 1 << 14
)

// bucketArray is an instance's bucket table in the kernel
// (bpf/include/mux_maps.h): B 16-bit compact entries, four to a word, then
// B side words, then (large tables) the block summaries. A bucket without
// history is its entry alone (its owner's id); a bucket with one has its
// whole word — owner, chain reference, change time — in its side word and
// bucketMoved in its entry, so the packets of buckets that never moved read
// 2 bytes per bucket, and in a block of one owner only the block's summary.
//
// Writes keep every read whole: a side word is stored (one atomic 64-bit
// store) before the entry naming it, and an entry by storing its whole
// word with the three neighbours unchanged (this type is the only writer).
// A block's summary is cleared before any of its entries changes and set
// again by settle, once the writer is done with the block.
type bucketArray struct {
	words *wordArray
	b     uint32 // buckets
	q     uint32 // words of compact entries: ceil(b/4)
	s     uint32 // first word of the summaries (q + b); 0: the table has none

	unsettled map[uint32]bool // blocks whose summary was cleared since the last settle
}

func newBucketArray(b uint32) (*bucketArray, error) {
	q := (b + 3) / 4
	n, s := q+b, uint32(0)
	if b >= summaryMinBuckets {
		s = n
		n += (blocksOf(b) + 3) / 4
	}
	w, err := newWordArray(n, true)
	if err != nil {
		return nil, err
	}
	return &bucketArray{words: w, b: b, q: q, s: s, unsettled: map[uint32]bool{}}, nil
}

func blocksOf(b uint32) uint32 { return (b + 1<<summaryShift - 1) >> summaryShift }

func (a *bucketArray) entry(i uint32) uint16 { return uint16(a.words.load(i/4) >> (16 * (i % 4))) }

// setLane stores the 16-bit lane i of the words from first on, its
// word's other three lanes unchanged.
func (a *bucketArray) setLane(first, i uint32, v uint16) {
	shift := 16 * (i % 4)
	w := a.words.load(first + i/4)
	a.words.store(first+i/4, w&^(0xffff<<shift)|uint64(v)<<shift)
}

func (a *bucketArray) setEntry(i uint32, e uint16) {
	if a.s != 0 {
		block := i >> summaryShift
		if !a.unsettled[block] {
			a.setLane(a.s, block, 0) // before the entry: never newer than it
			a.unsettled[block] = true
		}
	}
	a.setLane(0, i, e)
}

// summary is block's summary as the program reads it.
func (a *bucketArray) summary(block uint32) uint16 {
	return uint16(a.words.load(a.s+block/4) >> (16 * (block % 4)))
}

// settle sets the summaries cleared since the last settle again, for
// blocks whose buckets all name one owner without history. Called once
// the writer's entries are stored, before the generation is published.
func (a *bucketArray) settle() {
	for block := range a.unsettled {
		first := block << summaryShift
		last := min(first+1<<summaryShift, a.b)
		owner := a.entry(first)
		for i := first + 1; i < last && owner >= uint16(forwarding.MinServerID); i++ {
			if a.entry(i) != owner {
				owner = 0
			}
		}
		if owner >= uint16(forwarding.MinServerID) {
			a.setLane(a.s, block, owner)
		}
		delete(a.unsettled, block)
	}
}

// set stores bucket i: its owner, the reference of its history and its
// change time. keepChanged: the strategy reads the change time of a
// bucket without history (Prism's "migrating"), so such a bucket goes to
// its side word too; Beamer's option carries it only with a history. The
// block's summary stays cleared until settle.
func (a *bucketArray) set(i uint32, b forwarding.Bucket, ref uint16, keepChanged bool) {
	if ref == 0 && (b.Changed == 0 || !keepChanged) {
		a.setEntry(i, uint16(b.Current)) // bucketNone when it has no owner
		return
	}
	a.words.store(a.q+i, bucketWord(b, ref))
	a.setEntry(i, bucketMoved)
}

// get is bucket i as the program reads it: the whole word (bucketWord's
// layout), from the entry alone when the bucket never moved.
func (a *bucketArray) get(i uint32) uint64 {
	switch e := a.entry(i); e {
	case bucketMoved:
		return a.words.load(a.q + i)
	case bucketNone:
		return 0
	default:
		return uint64(e)
	}
}

func (a *bucketArray) close() {
	if a != nil {
		a.words.close()
	}
}
