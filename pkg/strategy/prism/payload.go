package prism

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring/ringspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Prism's MCT section (forwarding/mct.go) in the ring's payloads, at
// position 1, the first after the bucket columns; present only when the
// delta changes MCT entries or the blob's table has some (or a later
// section follows), so payloads of the other strategies are byte for byte
// what they were:
//
//	u32 M, M MCT records of 12 bytes: u64 signature, u16 server id, u8 op
//	(0 set, 1 remove; 0 in blobs), u8 zero.
//
// Blob records are sorted by signature.
const (
	// mctPosition is part of the stored format (ringspi): never change it.
	mctPosition = 1
	mctRecord   = 12
)

func init() { ringspi.Register(mctPosition, "prism MCT", mctSection{}) }

type mctSection struct{}

func (mctSection) Delta(d *forwarding.Delta) ringspi.Bytes { return mctBytes(d.MCT) }

func (mctSection) Table(t *forwarding.Table) ringspi.Bytes {
	mct := make([]forwarding.MCTChange, 0, len(t.MCT))
	for sig, id := range t.MCT {
		mct = append(mct, forwarding.MCTChange{Sig: sig, Server: id})
	}
	slices.SortFunc(mct, func(a, b forwarding.MCTChange) int { return cmp.Compare(a.Sig, b.Sig) })
	return mctBytes(mct)
}

func (mctSection) ReadDelta(r *ringspi.Reader, d *forwarding.Delta) { d.MCT = readMCT(r) }

func (mctSection) ReadTable(r *ringspi.Reader, t *forwarding.Table) {
	mct := readMCT(r)
	for _, c := range mct {
		if c.Remove {
			r.Fail(errors.New("blob has an MCT removal"))
			return
		}
		if t.MCT == nil {
			t.MCT = make(map[uint64]forwarding.ServerID, len(mct))
		}
		if _, dup := t.MCT[c.Sig]; dup {
			r.Fail(fmt.Errorf("MCT entry %#x twice in blob", c.Sig))
			return
		}
		t.MCT[c.Sig] = c.Server
	}
}

func mctBytes(cs []forwarding.MCTChange) ringspi.Bytes {
	return ringspi.Bytes{Empty: len(cs) == 0, Size: 4 + len(cs)*mctRecord, Put: func(b []byte) { putMCT(b, cs) }}
}

func putMCT(b []byte, cs []forwarding.MCTChange) {
	binary.LittleEndian.PutUint32(b, uint32(len(cs)))
	for i, c := range cs {
		r := b[4+i*mctRecord:]
		binary.LittleEndian.PutUint64(r, c.Sig)
		binary.LittleEndian.PutUint16(r[8:], uint16(c.Server))
		if c.Remove {
			r[10] = 1
		}
	}
}

// readMCT reads the section's records: nil for none (its empty form).
func readMCT(r *ringspi.Reader) []forwarding.MCTChange {
	n := r.Count(mctRecord)
	raw := r.Take(n * mctRecord)
	if r.Err() != nil || n == 0 {
		return nil
	}
	out := make([]forwarding.MCTChange, n)
	for i := range out {
		rec := raw[i*mctRecord:]
		if rec[10] > 1 || rec[11] != 0 {
			r.Fail(fmt.Errorf("MCT record %d: op %d, pad %d", i, rec[10], rec[11]))
			return nil
		}
		out[i] = forwarding.MCTChange{Sig: binary.LittleEndian.Uint64(rec), Server: forwarding.ServerID(binary.LittleEndian.Uint16(rec[8:])), Remove: rec[10] == 1}
	}
	return out
}
