package ring

import (
	"encoding/binary"
	"fmt"
	"net/netip"

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
// Both may end with strategies' own sections (tailSections), each in its
// strategy's file (payload_NAME.go).

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

// tailSection is a strategy's own section at the end of payloads, after
// the bucket columns (payload_NAME.go). Sections follow each other in the
// order of tailSections; one is written when it or a later one holds
// something (in its empty form then), so the payloads of strategies
// without a section are byte for byte what they were before it existed,
// and a reader stops at the payload's end.
type tailSection struct {
	// delta and table say what the section of d or t is to write.
	delta func(d *forwarding.Delta) sectionBytes
	table func(t *forwarding.Table) sectionBytes
	// readDelta and readTable read the section into d or t; a corrupt
	// section sets r.err.
	readDelta func(r *reader, d *forwarding.Delta)
	readTable func(r *reader, t *forwarding.Table)
}

// sectionBytes is one section of one payload: its size when written and
// its writer; empty sections are written only before a non-empty one, in
// their empty form (size and put stand for that form then).
type sectionBytes struct {
	empty bool
	size  int
	put   func(b []byte)
}

// tailSections are the strategies' sections in payload order: one line
// per strategy that keeps state of its own in the table.
var tailSections = []tailSection{prismMCTSection, cheetahSection}

// tailBytes is the size of one payload's sections and their writer: the
// sections up to the last non-empty one.
func tailBytes(parts []sectionBytes) (size int, put func(b []byte)) {
	last := -1
	for i, p := range parts {
		if !p.empty {
			last = i
		}
	}
	parts = parts[:last+1]
	for _, p := range parts {
		size += p.size
	}
	return size, func(b []byte) {
		for _, p := range parts {
			p.put(b)
			b = b[p.size:]
		}
	}
}

func deltaTail(d *forwarding.Delta) (int, func([]byte)) {
	parts := make([]sectionBytes, len(tailSections))
	for i, s := range tailSections {
		parts[i] = s.delta(d)
	}
	return tailBytes(parts)
}

func tableTail(t *forwarding.Table) (int, func([]byte)) {
	parts := make([]sectionBytes, len(tailSections))
	for i, s := range tailSections {
		parts[i] = s.table(t)
	}
	return tailBytes(parts)
}

// marshalDelta encodes d's raw payload.
func marshalDelta(d *forwarding.Delta) []byte {
	s, c := len(d.Servers), len(d.Buckets)
	bucket := func(i int) forwarding.Bucket { return d.Buckets[i].Bucket }
	cols := bucketColumnsSize(c, historyEntries(c, bucket))
	tail, putTail := deltaTail(d)
	recs := 0
	for _, sc := range d.Servers {
		recs += serverRecordSize(sc.Server)
	}
	b := make([]byte, 4+recs+4+4*c+cols+tail)
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
	putTail(b[off+cols:])
	return b
}

func unmarshalDelta(gen uint32, raw []byte) (*forwarding.Delta, error) {
	r := &reader{b: raw}
	d := &forwarding.Delta{Generation: gen, Servers: r.servers()}
	c := r.count(4 + bucketFixed)
	idx := r.take(4 * c)
	buckets := make([]forwarding.Bucket, c)
	r.bucketColumns(buckets)
	for _, s := range tailSections {
		s.readDelta(r, d)
	}
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
	tail, putTail := tableTail(t)
	recs := 0
	for _, id := range ids {
		recs += serverRecordSize(t.Servers[id])
	}
	b := make([]byte, 4+recs+4+cols+tail)
	binary.LittleEndian.PutUint32(b, uint32(len(ids)))
	off := 4
	for _, id := range ids {
		off += putServer(b[off:], id, t.Servers[id], false)
	}
	binary.LittleEndian.PutUint32(b[off:], uint32(n))
	putBucketColumns(b[off+4:], bucket, n)
	putTail(b[off+4+cols:])
	return b
}

func unmarshalBlob(gen uint32, raw []byte) (*forwarding.Table, error) {
	r := &reader{b: raw}
	servers := r.servers()
	n := r.count(bucketFixed)
	t := &forwarding.Table{Generation: gen, Buckets: make([]forwarding.Bucket, n), Servers: make(map[forwarding.ServerID]forwarding.Server, len(servers))}
	r.bucketColumns(t.Buckets)
	for _, s := range tailSections {
		s.readTable(r, t)
	}
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
