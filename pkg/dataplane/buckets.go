package dataplane

import "github.com/beamer-lb/beamer/pkg/forwarding"

// Compact entries that name no server (bpf/include/mux_maps.h).
const (
	bucketNone  = 0
	bucketMoved = 1
)

// bucketArray is an instance's bucket table in the kernel
// (bpf/include/mux_maps.h): B 16-bit compact entries, four to a word, then
// B side words. A bucket without history is its entry alone (its owner's
// id); a bucket with one has its whole word — owner, chain reference,
// change time — in its side word and bucketMoved in its entry, so the
// packets of buckets that never moved read 2 bytes per bucket.
//
// Writes keep every read whole: a side word is stored (one atomic 64-bit
// store) before the entry naming it, and an entry by storing its whole
// word with the three neighbours unchanged (this type is the only writer).
type bucketArray struct {
	words *wordArray
	b     uint32 // buckets
	q     uint32 // words of compact entries: ceil(b/4)
}

func newBucketArray(b uint32) (*bucketArray, error) {
	q := (b + 3) / 4
	w, err := newWordArray(q+b, true)
	if err != nil {
		return nil, err
	}
	return &bucketArray{words: w, b: b, q: q}, nil
}

func (a *bucketArray) entry(i uint32) uint16 { return uint16(a.words.load(i/4) >> (16 * (i % 4))) }

func (a *bucketArray) setEntry(i uint32, e uint16) {
	shift := 16 * (i % 4)
	w := a.words.load(i / 4)
	a.words.store(i/4, w&^(0xffff<<shift)|uint64(e)<<shift)
}

// set stores bucket i: its owner, the reference of its history and its
// change time. keepChanged: the strategy reads the change time of a
// bucket without history (Prism's "migrating"), so such a bucket goes to
// its side word too; Beamer's option carries it only with a history.
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
