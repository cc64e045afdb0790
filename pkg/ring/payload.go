package ring

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Raw (decompressed) payloads, little-endian. Buckets are stored by column
// (all owners, then all previous owners, then all timestamps) because each
// column is made of long runs — a server owns a range of buckets, moved
// buckets share a timestamp — which zlib compresses far better than
// interleaved records.
//
// Server record, 8 bytes: u16 id, u8 op (0 set, 1 remove; 0 in blobs),
// u8 state, [4] IPv4 address.
//
// Delta: u32 S, S server records, u32 C, C × u32 bucket index,
// C × u16 owner, C × u16 previous owner, C × u32 changed.
//
// Blob: u32 S, S server records (sorted by id), u32 B, B × u16 owner,
// B × u16 previous owner, B × u32 changed.

const serverRecord = 8

func putServer(b []byte, id forwarding.ServerID, s forwarding.Server, remove bool) {
	binary.LittleEndian.PutUint16(b, uint16(id))
	if remove {
		b[2] = 1
	}
	b[3] = byte(s.State)
	if s.Addr.Is4() { // a removal carries no address
		a := s.Addr.As4()
		copy(b[4:8], a[:])
	}
}

// reader walks a raw payload; the first out-of-bounds read sets err and
// makes every later read return zeros.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		if r.err == nil {
			r.err = fmt.Errorf("%w: payload truncated", ErrCorrupt)
		}
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// count reads an element count and checks that that many elements of size
// bytes fit in what is left, so a corrupt count cannot make us allocate.
func (r *reader) count(size int) int {
	n := int(r.u32())
	if r.err == nil && n*size > len(r.b) {
		r.err = fmt.Errorf("%w: count %d does not fit in %d bytes left", ErrCorrupt, n, len(r.b))
		return 0
	}
	return n
}

func (r *reader) servers() []forwarding.ServerChange {
	n := r.count(serverRecord)
	b := r.take(n * serverRecord)
	out := make([]forwarding.ServerChange, n)
	for i := range out {
		rec := b[i*serverRecord:]
		out[i] = forwarding.ServerChange{
			ID:     forwarding.ServerID(binary.LittleEndian.Uint16(rec)),
			Remove: rec[2] == 1,
			Server: forwarding.Server{State: forwarding.ServerState(rec[3]), Addr: netip.AddrFrom4([4]byte(rec[4:8]))},
		}
		if rec[2] > 1 {
			r.err = fmt.Errorf("%w: server record op %d", ErrCorrupt, rec[2])
		}
		if out[i].Remove {
			out[i].Server = forwarding.Server{}
		}
	}
	return out
}

// bucketColumns reads n owners, previous owners and timestamps into dst.
func (r *reader) bucketColumns(dst []forwarding.Bucket) {
	n := len(dst)
	cur, prev, changed := r.take(2*n), r.take(2*n), r.take(4*n)
	if r.err != nil {
		return
	}
	for i := range dst {
		dst[i] = forwarding.Bucket{
			Current: forwarding.ServerID(binary.LittleEndian.Uint16(cur[2*i:])),
			History: forwarding.Chain{forwarding.ServerID(binary.LittleEndian.Uint16(prev[2*i:]))},
			Changed: binary.LittleEndian.Uint32(changed[4*i:]),
		}
	}
}

func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the payload", ErrCorrupt, len(r.b))
	}
	return r.err
}

func putBucketColumns(b []byte, buckets func(i int) forwarding.Bucket, n int) {
	cur, prev, changed := b[:2*n], b[2*n:4*n], b[4*n:8*n]
	for i := range n {
		bk := buckets(i)
		binary.LittleEndian.PutUint16(cur[2*i:], uint16(bk.Current))
		binary.LittleEndian.PutUint16(prev[2*i:], uint16(bk.History[0]))
		binary.LittleEndian.PutUint32(changed[4*i:], bk.Changed)
	}
}

// marshalDelta encodes d's raw payload.
func marshalDelta(d *forwarding.Delta) []byte {
	s, c := len(d.Servers), len(d.Buckets)
	b := make([]byte, 4+s*serverRecord+4+c*12)
	binary.LittleEndian.PutUint32(b, uint32(s))
	off := 4
	for _, sc := range d.Servers {
		putServer(b[off:], sc.ID, sc.Server, sc.Remove)
		off += serverRecord
	}
	binary.LittleEndian.PutUint32(b[off:], uint32(c))
	off += 4
	for i, bc := range d.Buckets {
		binary.LittleEndian.PutUint32(b[off+4*i:], bc.Index)
	}
	off += 4 * c
	putBucketColumns(b[off:], func(i int) forwarding.Bucket { return d.Buckets[i].Bucket }, c)
	return b
}

func unmarshalDelta(gen uint32, raw []byte) (*forwarding.Delta, error) {
	r := &reader{b: raw}
	d := &forwarding.Delta{Generation: gen, Servers: r.servers()}
	c := r.count(12)
	idx := r.take(4 * c)
	buckets := make([]forwarding.Bucket, c)
	r.bucketColumns(buckets)
	if err := r.end(); err != nil {
		return nil, err
	}
	d.Buckets = make([]forwarding.BucketChange, c)
	for i := range d.Buckets {
		d.Buckets[i] = forwarding.BucketChange{Index: binary.LittleEndian.Uint32(idx[4*i:]), Bucket: buckets[i]}
	}
	return d, nil
}

// marshalBlob encodes t's raw payload.
func marshalBlob(t *forwarding.Table) []byte {
	ids := sortedIDs(t.Servers)
	n := len(t.Buckets)
	b := make([]byte, 4+len(ids)*serverRecord+4+8*n)
	binary.LittleEndian.PutUint32(b, uint32(len(ids)))
	off := 4
	for _, id := range ids {
		putServer(b[off:], id, t.Servers[id], false)
		off += serverRecord
	}
	binary.LittleEndian.PutUint32(b[off:], uint32(n))
	putBucketColumns(b[off+4:], func(i int) forwarding.Bucket { return t.Buckets[i] }, n)
	return b
}

func unmarshalBlob(gen uint32, raw []byte) (*forwarding.Table, error) {
	r := &reader{b: raw}
	servers := r.servers()
	n := r.count(8)
	t := &forwarding.Table{Generation: gen, Buckets: make([]forwarding.Bucket, n), Servers: make(map[forwarding.ServerID]forwarding.Server, len(servers))}
	r.bucketColumns(t.Buckets)
	if err := r.end(); err != nil {
		return nil, err
	}
	for _, s := range servers {
		if s.Remove {
			return nil, fmt.Errorf("%w: blob has a server removal", ErrCorrupt)
		}
		if _, dup := t.Servers[s.ID]; dup {
			return nil, fmt.Errorf("%w: server %d twice in blob", ErrCorrupt, s.ID)
		}
		t.Servers[s.ID] = s.Server
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return t, nil
}

func sortedIDs(m map[forwarding.ServerID]forwarding.Server) []forwarding.ServerID {
	var present [int(forwarding.MaxServerID) + 1]bool
	for id := range m {
		present[id] = true
	}
	ids := make([]forwarding.ServerID, 0, len(m))
	for id, ok := range present {
		if ok {
			ids = append(ids, forwarding.ServerID(id))
		}
	}
	return ids
}
