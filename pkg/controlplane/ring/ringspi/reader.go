package ringspi

import (
	"encoding/binary"
	"fmt"
)

// Reader walks a section of a raw payload; the first out-of-bounds read or
// Fail sets its error and makes every later read return zeros, so a
// section reads on without checking after each step and looks at Err once.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Len is how many bytes are left.
func (r *Reader) Len() int { return len(r.b) }

// Err is the first error.
func (r *Reader) Err() error { return r.err }

// Fail records err unless an error came first.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Take returns the next n bytes, or nil when fewer are left.
func (r *Reader) Take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.Fail(fmt.Errorf("section truncated: %d bytes wanted, %d left", n, len(r.b)))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// U32 reads a little-endian u32.
func (r *Reader) U32() uint32 {
	b := r.Take(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// Count reads an element count (u32) and checks that that many elements
// of size bytes fit in what is left, so a corrupt count cannot make the
// section allocate.
func (r *Reader) Count(size int) int {
	n := int(r.U32())
	if r.err == nil && n*size > len(r.b) {
		r.Fail(fmt.Errorf("count %d of %d-byte records does not fit in %d bytes left", n, size, len(r.b)))
		return 0
	}
	return n
}
