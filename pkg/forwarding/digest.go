package forwarding

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
)

// Digest names the forwarding content of t — buckets (owner, history,
// change time), servers, Prism's MCT and Cheetah's loads, not the pair
// (incarnation, generation) nor Cheetah's keys — as 16 hex digits of a
// SHA-256. Two tables with equal digests forward alike; a mux logs it with
// every table it applies so that a history checker
// (research/faults/history) can tell whether one pair ever named two
// tables.
func (t *Table) Digest() string {
	h := sha256.New()
	var b []byte
	put16 := func(v uint16) { b = binary.BigEndian.AppendUint16(b, v) }
	put32 := func(v uint32) { b = binary.BigEndian.AppendUint32(b, v) }
	put32(uint32(len(t.Buckets)))
	for _, bk := range t.Buckets {
		put16(uint16(bk.Current))
		for _, id := range bk.History {
			put16(uint16(id))
		}
		put32(bk.Changed)
		if len(b) >= 4096 {
			h.Write(b)
			b = b[:0]
		}
	}
	put32(uint32(len(t.Servers)))
	for _, id := range slices.Sorted(maps.Keys(t.Servers)) {
		s := t.Servers[id]
		put16(uint16(id))
		a := s.Addr.As16()
		b = append(b, a[:]...)
		b = append(b, byte(s.State))
	}
	put32(uint32(len(t.MCT)))
	for _, k := range slices.Sorted(maps.Keys(t.MCT)) {
		b = binary.BigEndian.AppendUint64(b, k)
		put16(uint16(t.MCT[k]))
	}
	if t.Cheetah != nil {
		put32(uint32(len(t.Cheetah.Loads)))
		for _, id := range slices.Sorted(maps.Keys(t.Cheetah.Loads)) {
			put16(uint16(id))
			put32(t.Cheetah.Loads[id])
		}
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:8])
}
