package ring

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// The Cheetah section (forwarding.CheetahState) ends a delta that replaces
// the instance's keys and loads, and the blob of a Cheetah table. It comes
// after the MCT section, which is then always written (u32 0 when empty),
// so a payload without it is byte for byte what it was:
//
//	u32 magic "CHT1", u8 current key id, [3] zero, 2 × 16 key bytes (each
//	key 4 × u32), u32 L, L load records of 8 bytes sorted by server id:
//	u16 id, u16 zero, u32 established connections.
const (
	cheetahMagic  = 0x31544843 // "CHT1" little-endian
	cheetahFixed  = 4 + 4 + 32 + 4
	cheetahRecord = 8
)

// cheetahSection is the last tail section: it has no empty form, as
// nothing follows it.
var cheetahSection = tailSection{
	delta:     func(d *forwarding.Delta) sectionBytes { return cheetahBytes(d.Cheetah) },
	table:     func(t *forwarding.Table) sectionBytes { return cheetahBytes(t.Cheetah) },
	readDelta: func(r *reader, d *forwarding.Delta) { d.Cheetah = r.cheetah() },
	readTable: func(r *reader, t *forwarding.Table) { t.Cheetah = r.cheetah() },
}

func cheetahBytes(s *forwarding.CheetahState) sectionBytes {
	if s == nil {
		return sectionBytes{empty: true}
	}
	return sectionBytes{size: cheetahFixed + len(s.Loads)*cheetahRecord, put: func(b []byte) { putCheetah(b, s) }}
}

func putCheetah(b []byte, s *forwarding.CheetahState) {
	binary.LittleEndian.PutUint32(b, cheetahMagic)
	b[4] = s.Keys.Current
	for i, k := range s.Keys.Keys {
		for j, w := range k {
			binary.LittleEndian.PutUint32(b[8+16*i+4*j:], w)
		}
	}
	binary.LittleEndian.PutUint32(b[40:], uint32(len(s.Loads)))
	ids := make([]forwarding.ServerID, 0, len(s.Loads))
	for id := range s.Loads {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		r := b[cheetahFixed+i*cheetahRecord:]
		binary.LittleEndian.PutUint16(r, uint16(id))
		binary.LittleEndian.PutUint32(r[4:], s.Loads[id])
	}
}

// cheetah reads the optional Cheetah section: nil when the payload ends.
func (r *reader) cheetah() *forwarding.CheetahState {
	if r.err != nil || len(r.b) == 0 {
		return nil
	}
	h := r.take(cheetahFixed - 4)
	if r.err != nil {
		return nil
	}
	if binary.LittleEndian.Uint32(h) != cheetahMagic || h[5] != 0 || h[6] != 0 || h[7] != 0 {
		r.err = fmt.Errorf("%w: bad cheetah section header % x", ErrCorrupt, h[:8])
		return nil
	}
	s := &forwarding.CheetahState{}
	s.Keys.Current = h[4]
	for i := range s.Keys.Keys {
		for j := range s.Keys.Keys[i] {
			s.Keys.Keys[i][j] = binary.LittleEndian.Uint32(h[8+16*i+4*j:])
		}
	}
	n := r.count(cheetahRecord)
	raw := r.take(n * cheetahRecord)
	if r.err != nil {
		return nil
	}
	if n > 0 {
		s.Loads = make(map[forwarding.ServerID]uint32, n)
	}
	prev := -1
	for i := range n {
		rec := raw[i*cheetahRecord:]
		id := int(binary.LittleEndian.Uint16(rec))
		if id <= prev || rec[2] != 0 || rec[3] != 0 {
			r.err = fmt.Errorf("%w: cheetah load record %d (server %d after %d, pad % x)", ErrCorrupt, i, id, prev, rec[2:4])
			return nil
		}
		prev = id
		s.Loads[forwarding.ServerID(id)] = binary.LittleEndian.Uint32(rec[4:])
	}
	if err := s.Check(); err != nil {
		r.err = fmt.Errorf("%w: %v", ErrCorrupt, err)
		return nil
	}
	return s
}
