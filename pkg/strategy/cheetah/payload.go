package cheetah

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring/ringspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// The Cheetah section (forwarding.CheetahState) of the ring's payloads, at
// position 2, after Prism's MCT section (which is then always written,
// u32 0 when empty), ends a delta that replaces the instance's keys and
// loads, and the blob of a Cheetah table; a payload without it is byte for
// byte what it was:
//
//	u32 magic "CHT1", u8 current key id, [3] zero, 2 × 16 key bytes (each
//	key 4 × u32), u32 L, L load records of 8 bytes sorted by server id:
//	u16 id, u16 zero, u32 established connections.
const (
	// payloadPosition is part of the stored format (ringspi): never
	// change it.
	payloadPosition = 2
	cheetahMagic    = 0x31544843 // "CHT1" little-endian
	cheetahFixed    = 4 + 4 + 32 + 4
	cheetahRecord   = 8
)

// A load record per server must fit the ring's per-server budget.
var _ [ringspi.MaxServerBytes - cheetahRecord]struct{}

func init() { ringspi.Register(payloadPosition, "cheetah keys and loads", section{}) }

// section has no empty form: nothing may follow it (ringspi.Bytes).
type section struct{}

func (section) Delta(d *forwarding.Delta) ringspi.Bytes          { return sectionBytes(d.Cheetah) }
func (section) Table(t *forwarding.Table) ringspi.Bytes          { return sectionBytes(t.Cheetah) }
func (section) ReadDelta(r *ringspi.Reader, d *forwarding.Delta) { d.Cheetah = readSection(r) }
func (section) ReadTable(r *ringspi.Reader, t *forwarding.Table) { t.Cheetah = readSection(r) }

// Same: the ring checks what it loads against what it published with the
// keys and loads too (ringspi.Comparer).
func (section) Same(a, b *forwarding.Table) bool { return a.Cheetah.Equal(b.Cheetah) }

func sectionBytes(s *forwarding.CheetahState) ringspi.Bytes {
	if s == nil {
		return ringspi.Bytes{Empty: true}
	}
	return ringspi.Bytes{Size: cheetahFixed + len(s.Loads)*cheetahRecord, Put: func(b []byte) { putSection(b, s) }}
}

func putSection(b []byte, s *forwarding.CheetahState) {
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

// readSection reads the keys and loads, checked (CheetahState.Check).
func readSection(r *ringspi.Reader) *forwarding.CheetahState {
	h := r.Take(cheetahFixed - 4)
	if r.Err() != nil {
		return nil
	}
	if binary.LittleEndian.Uint32(h) != cheetahMagic || h[5] != 0 || h[6] != 0 || h[7] != 0 {
		r.Fail(fmt.Errorf("bad cheetah section header % x", h[:8]))
		return nil
	}
	s := &forwarding.CheetahState{}
	s.Keys.Current = h[4]
	for i := range s.Keys.Keys {
		for j := range s.Keys.Keys[i] {
			s.Keys.Keys[i][j] = binary.LittleEndian.Uint32(h[8+16*i+4*j:])
		}
	}
	n := r.Count(cheetahRecord)
	raw := r.Take(n * cheetahRecord)
	if r.Err() != nil {
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
			r.Fail(fmt.Errorf("cheetah load record %d (server %d after %d, pad % x)", i, id, prev, rec[2:4]))
			return nil
		}
		prev = id
		s.Loads[forwarding.ServerID(id)] = binary.LittleEndian.Uint32(rec[4:])
	}
	if err := s.Check(); err != nil {
		r.Fail(err)
		return nil
	}
	return s
}
