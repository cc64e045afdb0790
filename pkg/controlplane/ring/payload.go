package ring

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Raw (decompressed) payloads, little-endian. Buckets are stored by column
// (all owners, then all timestamps, then all history lengths, then the
// histories) because each column is made of long runs — a server owns a
// range of buckets, moved buckets share a timestamp and a history — which
// zlib compresses far better than interleaved records.
//
// Server record, 8 bytes: u16 id, u8 op (0 set, 1 remove; 0 in blobs),
// u8 state, [4] IPv4 address. An IPv6 server's record sets bit 1 of op
// (opIPv6) and carries [16] IPv6 address instead: 20 bytes. IPv4 records
// are what they were before IPv6, byte for byte, so stores written by
// older controllers load; an older reader meets op 2 and refuses the
// payload as corrupt rather than reading a wrong address.
//
// Bucket columns for n buckets: n × u16 owner, n × u32 changed, n × u8
// history length (0..forwarding.MaxChain), then the history entries by
// depth: every bucket's first previous owner (buckets whose history has
// one), then every second one, and so on, each a u16.
//
// Delta: u32 S, S server records, u32 C, C × u32 bucket index, bucket
// columns of the C buckets.
//
// Blob: u32 S, S server records (sorted by id), u32 B, bucket columns of
// the B buckets.
//
// Both may end with Prism's MCT section (forwarding/mct.go), present only
// when the delta changes MCT entries or the blob's table has some, so
// payloads of the other strategies are byte for byte what they were:
// u32 M, M MCT records of 12 bytes: u64 signature, u16 server id, u8 op
// (0 set, 1 remove; 0 in blobs), u8 zero. Blob records are sorted by
// signature. Cheetah's section may follow (payload_cheetah.go).

const serverRecord = 8

// serverRecord6 is the size of an IPv6 server's record; opIPv6 marks it.
const (
	serverRecord6 = 20
	opIPv6        = 2
)

// serverRecordSize is the size of s's record.
func serverRecordSize(s forwarding.Server) int {
	if s.Addr.Is6() {
		return serverRecord6
	}
	return serverRecord
}

const mctRecord = 12

func mctSize(n int, always bool) int {
	if n == 0 && !always {
		return 0
	}
	return 4 + n*mctRecord
}

func putMCT(b []byte, cs []forwarding.MCTChange, always bool) {
	if len(cs) == 0 && !always {
		return
	}
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

// putServer writes one server record and returns its size.
func putServer(b []byte, id forwarding.ServerID, s forwarding.Server, remove bool) int {
	binary.LittleEndian.PutUint16(b, uint16(id))
	if remove {
		b[2] = 1
	}
	b[3] = byte(s.State)
	switch {
	case s.Addr.Is4():
		a := s.Addr.As4()
		copy(b[4:8], a[:])
	case s.Addr.Is6():
		b[2] |= opIPv6
		a := s.Addr.As16()
		copy(b[4:20], a[:])
		return serverRecord6
	}
	return serverRecord // a removal of an IPv4 server, or one with no address
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
	// Every record is at least serverRecord bytes, which bounds n before
	// anything is allocated; IPv6 records take more as they are read.
	n := r.count(serverRecord)
	if r.err != nil {
		return nil
	}
	out := make([]forwarding.ServerChange, n)
	for i := range out {
		head := r.take(4)
		if head == nil {
			return nil
		}
		op := head[2]
		if op&^opIPv6 > 1 {
			r.err = fmt.Errorf("%w: server record op %d", ErrCorrupt, op)
			return nil
		}
		var addr netip.Addr
		if op&opIPv6 != 0 {
			a := r.take(16)
			if a == nil {
				return nil
			}
			addr = netip.AddrFrom16([16]byte(a))
			if addr.Is4In6() {
				r.err = fmt.Errorf("%w: server record %d: IPv4-mapped address %v in an IPv6 record", ErrCorrupt, i, addr)
				return nil
			}
		} else {
			a := r.take(4)
			if a == nil {
				return nil
			}
			addr = netip.AddrFrom4([4]byte(a))
		}
		out[i] = forwarding.ServerChange{
			ID:     forwarding.ServerID(binary.LittleEndian.Uint16(head)),
			Remove: op&1 == 1,
			Server: forwarding.Server{State: forwarding.ServerState(head[3]), Addr: addr},
		}
		if out[i].Remove {
			out[i].Server = forwarding.Server{}
		}
	}
	return out
}

// bucketFixed is what each bucket takes at least in the bucket columns:
// owner, changed and history length.
const bucketFixed = 2 + 4 + 1

// bucketColumns reads n buckets' columns into dst. Every length is checked
// before it is used: a history longer than forwarding.MaxChain, or entries
// beyond the payload, make the payload corrupt.
func (r *reader) bucketColumns(dst []forwarding.Bucket) {
	n := len(dst)
	cur, changed, lens := r.take(2*n), r.take(4*n), r.take(n)
	if r.err != nil {
		return
	}
	total := 0
	for i, l := range lens {
		if int(l) > forwarding.MaxChain {
			r.err = fmt.Errorf("%w: bucket %d has a history of %d (at most %d)", ErrCorrupt, i, l, forwarding.MaxChain)
			return
		}
		total += int(l)
	}
	hist := r.take(2 * total)
	if r.err != nil {
		return
	}
	for i := range dst {
		dst[i] = forwarding.Bucket{
			Current: forwarding.ServerID(binary.LittleEndian.Uint16(cur[2*i:])),
			Changed: binary.LittleEndian.Uint32(changed[4*i:]),
		}
	}
	off := 0
	for depth := range forwarding.MaxChain {
		for i, l := range lens {
			if int(l) > depth {
				dst[i].History[depth] = forwarding.ServerID(binary.LittleEndian.Uint16(hist[off:]))
				off += 2
			}
		}
	}
}

func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%w: %d bytes after the payload", ErrCorrupt, len(r.b))
	}
	return r.err
}

// bucketColumnsSize is the size of the bucket columns of n buckets whose
// histories hold entries previous owners in all.
func bucketColumnsSize(n, entries int) int { return bucketFixed*n + 2*entries }

func historyEntries(n int, buckets func(i int) forwarding.Bucket) int {
	e := 0
	for i := range n {
		e += buckets(i).History.Len()
	}
	return e
}

func putBucketColumns(b []byte, buckets func(i int) forwarding.Bucket, n int) {
	cur, changed, lens, hist := b[:2*n], b[2*n:6*n], b[6*n:7*n], b[7*n:]
	for i := range n {
		bk := buckets(i)
		binary.LittleEndian.PutUint16(cur[2*i:], uint16(bk.Current))
		binary.LittleEndian.PutUint32(changed[4*i:], bk.Changed)
		lens[i] = byte(bk.History.Len())
	}
	off := 0
	for depth := range forwarding.MaxChain {
		for i := range n {
			if int(lens[i]) > depth {
				binary.LittleEndian.PutUint16(hist[off:], uint16(buckets(i).History[depth]))
				off += 2
			}
		}
	}
}

// marshalDelta encodes d's raw payload.
func marshalDelta(d *forwarding.Delta) []byte {
	s, c := len(d.Servers), len(d.Buckets)
	bucket := func(i int) forwarding.Bucket { return d.Buckets[i].Bucket }
	cols := bucketColumnsSize(c, historyEntries(c, bucket))
	chee := d.Cheetah != nil
	mcts := mctSize(len(d.MCT), chee)
	recs := 0
	for _, sc := range d.Servers {
		recs += serverRecordSize(sc.Server)
	}
	b := make([]byte, 4+recs+4+4*c+cols+mcts+cheetahSize(d.Cheetah))
	binary.LittleEndian.PutUint32(b, uint32(s))
	off := 4
	for _, sc := range d.Servers {
		off += putServer(b[off:], sc.ID, sc.Server, sc.Remove)
	}
	binary.LittleEndian.PutUint32(b[off:], uint32(c))
	off += 4
	for i, bc := range d.Buckets {
		binary.LittleEndian.PutUint32(b[off+4*i:], bc.Index)
	}
	off += 4 * c
	putBucketColumns(b[off:], bucket, c)
	putMCT(b[off+cols:], d.MCT, chee)
	putCheetah(b[off+cols+mcts:], d.Cheetah)
	return b
}

func unmarshalDelta(gen uint32, raw []byte) (*forwarding.Delta, error) {
	r := &reader{b: raw}
	d := &forwarding.Delta{Generation: gen, Servers: r.servers()}
	c := r.count(4 + bucketFixed)
	idx := r.take(4 * c)
	buckets := make([]forwarding.Bucket, c)
	r.bucketColumns(buckets)
	d.MCT = r.mct()
	d.Cheetah = r.cheetah()
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
	bucket := func(i int) forwarding.Bucket { return t.Buckets[i] }
	cols := bucketColumnsSize(n, historyEntries(n, bucket))
	mct := make([]forwarding.MCTChange, 0, len(t.MCT))
	for sig, id := range t.MCT {
		mct = append(mct, forwarding.MCTChange{Sig: sig, Server: id})
	}
	slices.SortFunc(mct, func(a, b forwarding.MCTChange) int { return cmp.Compare(a.Sig, b.Sig) })
	chee := t.Cheetah != nil
	mcts := mctSize(len(mct), chee)
	recs := 0
	for _, id := range ids {
		recs += serverRecordSize(t.Servers[id])
	}
	b := make([]byte, 4+recs+4+cols+mcts+cheetahSize(t.Cheetah))
	binary.LittleEndian.PutUint32(b, uint32(len(ids)))
	off := 4
	for _, id := range ids {
		off += putServer(b[off:], id, t.Servers[id], false)
	}
	binary.LittleEndian.PutUint32(b[off:], uint32(n))
	putBucketColumns(b[off+4:], bucket, n)
	putMCT(b[off+4+cols:], mct, chee)
	putCheetah(b[off+4+cols+mcts:], t.Cheetah)
	return b
}

func unmarshalBlob(gen uint32, raw []byte) (*forwarding.Table, error) {
	r := &reader{b: raw}
	servers := r.servers()
	n := r.count(bucketFixed)
	t := &forwarding.Table{Generation: gen, Buckets: make([]forwarding.Bucket, n), Servers: make(map[forwarding.ServerID]forwarding.Server, len(servers))}
	r.bucketColumns(t.Buckets)
	mct := r.mct()
	t.Cheetah = r.cheetah()
	if err := r.end(); err != nil {
		return nil, err
	}
	for _, c := range mct {
		if c.Remove {
			return nil, fmt.Errorf("%w: blob has an MCT removal", ErrCorrupt)
		}
		if t.MCT == nil {
			t.MCT = make(map[uint64]forwarding.ServerID, len(mct))
		}
		if _, dup := t.MCT[c.Sig]; dup {
			return nil, fmt.Errorf("%w: MCT entry %#x twice in blob", ErrCorrupt, c.Sig)
		}
		t.MCT[c.Sig] = c.Server
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
