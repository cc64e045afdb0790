package ring

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Prism's MCT section (forwarding/mct.go), the first of the tail sections,
// present only when the delta changes MCT entries or the blob's table has
// some (or a later section follows), so payloads of the other strategies
// are byte for byte what they were:
//
//	u32 M, M MCT records of 12 bytes: u64 signature, u16 server id, u8 op
//	(0 set, 1 remove; 0 in blobs), u8 zero.
//
// Blob records are sorted by signature.
const mctRecord = 12

var prismMCTSection = tailSection{
	delta: func(d *forwarding.Delta) sectionBytes { return mctBytes(d.MCT) },
	table: func(t *forwarding.Table) sectionBytes {
		mct := make([]forwarding.MCTChange, 0, len(t.MCT))
		for sig, id := range t.MCT {
			mct = append(mct, forwarding.MCTChange{Sig: sig, Server: id})
		}
		slices.SortFunc(mct, func(a, b forwarding.MCTChange) int { return cmp.Compare(a.Sig, b.Sig) })
		return mctBytes(mct)
	},
	readDelta: func(r *reader, d *forwarding.Delta) { d.MCT = r.mct() },
	readTable: func(r *reader, t *forwarding.Table) {
		mct := r.mct()
		for _, c := range mct {
			if c.Remove {
				r.err = fmt.Errorf("%w: blob has an MCT removal", ErrCorrupt)
				return
			}
			if t.MCT == nil {
				t.MCT = make(map[uint64]forwarding.ServerID, len(mct))
			}
			if _, dup := t.MCT[c.Sig]; dup {
				r.err = fmt.Errorf("%w: MCT entry %#x twice in blob", ErrCorrupt, c.Sig)
				return
			}
			t.MCT[c.Sig] = c.Server
		}
	},
}

func mctBytes(cs []forwarding.MCTChange) sectionBytes {
	return sectionBytes{empty: len(cs) == 0, size: 4 + len(cs)*mctRecord, put: func(b []byte) { putMCT(b, cs) }}
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

// mct reads the optional MCT section: nothing when the payload ends here.
func (r *reader) mct() []forwarding.MCTChange {
	if r.err != nil || len(r.b) == 0 {
		return nil
	}
	n := r.count(mctRecord)
	raw := r.take(n * mctRecord)
	if r.err != nil || n == 0 {
		return nil
	}
	out := make([]forwarding.MCTChange, n)
	for i := range out {
		rec := raw[i*mctRecord:]
		if rec[10] > 1 || rec[11] != 0 {
			r.err = fmt.Errorf("%w: MCT record %d: op %d, pad %d", ErrCorrupt, i, rec[10], rec[11])
			return nil
		}
		out[i] = forwarding.MCTChange{Sig: binary.LittleEndian.Uint64(rec), Server: forwarding.ServerID(binary.LittleEndian.Uint16(rec[8:])), Remove: rec[10] == 1}
	}
	return out
}
