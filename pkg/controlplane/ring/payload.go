package ring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring/ringspi"
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
// Both may end with strategies' own sections, in the order of their fixed
// positions (ringspi), each in its strategy's folder
// (pkg/strategy/NAME/payload.go).

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

// tailBytes is the size of one payload's sections and their writer: the
// sections up to the last non-empty one (ringspi: an empty section is
// written, in its empty form, only before a non-empty one).
func tailBytes(secs []ringspi.Registered, part func(s ringspi.Section) ringspi.Bytes) (size int, put func(b []byte), err error) {
	parts := make([]ringspi.Bytes, len(secs))
	last := -1
	for i, s := range secs {
		parts[i] = part(s.Section)
		if !parts[i].Empty {
			last = i
		}
	}
	for i, p := range parts[:last+1] {
		if p.Put == nil {
			return 0, nil, fmt.Errorf("ring: payload %v has no empty form and cannot come before %v", secs[i], secs[last])
		}
		size += p.Size
	}
	parts = parts[:last+1]
	return size, func(b []byte) {
		for _, p := range parts {
			p.Put(b[:p.Size])
			b = b[p.Size:]
		}
	}, nil
}

// readTail reads the sections into the payload read so far: each one the
// payload carries, in order, and refuses bytes after the last section this
// build knows (ErrUnknownSection).
func readTail(r *reader, secs []ringspi.Registered, read func(s ringspi.Section, sr *ringspi.Reader)) {
	for _, s := range secs {
		if r.err != nil || len(r.b) == 0 {
			return
		}
		sr := ringspi.NewReader(r.b)
		read(s.Section, sr)
		if err := sr.Err(); err != nil {
			r.err = fmt.Errorf("%w: payload %v: %w", ErrCorrupt, s, err)
			return
		}
		r.b = r.b[len(r.b)-sr.Len():]
	}
	if r.err == nil && len(r.b) != 0 {
		known := "none"
		if len(secs) > 0 {
			known = fmt.Sprint(secs[len(secs)-1])
		}
		r.err = fmt.Errorf("%w: %w: %d bytes after the last section this build reads (%s): a section of a strategy this build does not have, or damage",
			ErrCorrupt, ErrUnknownSection, len(r.b), known)
	}
}

// ErrUnknownSection is a payload that goes on past the strategies'
// sections this build knows (ringspi). It comes wrapped in ErrCorrupt,
// as the reader cannot tell it from damage.
var ErrUnknownSection = errors.New("unknown payload section")

// sections are the strategies' payload sections in payload order.
func sections() ([]ringspi.Registered, error) {
	secs, err := ringspi.Sections()
	if err != nil {
		return nil, fmt.Errorf("ring: %w", err)
	}
	return secs, nil
}

// marshalDelta encodes d's raw payload.
func marshalDelta(d *forwarding.Delta) ([]byte, error) {
	secs, err := sections()
	if err != nil {
		return nil, err
	}
	tail, putTail, err := tailBytes(secs, func(s ringspi.Section) ringspi.Bytes { return s.Delta(d) })
	if err != nil {
		return nil, err
	}
	s, c := len(d.Servers), len(d.Buckets)
	bucket := func(i int) forwarding.Bucket { return d.Buckets[i].Bucket }
	cols := bucketColumnsSize(c, historyEntries(c, bucket))
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
	return b, nil
}

func unmarshalDelta(gen uint32, raw []byte) (*forwarding.Delta, error) {
	secs, err := sections()
	if err != nil {
		return nil, err
	}
	r := &reader{b: raw}
	d := &forwarding.Delta{Generation: gen, Servers: r.servers()}
	c := r.count(4 + bucketFixed)
	idx := r.take(4 * c)
	buckets := make([]forwarding.Bucket, c)
	r.bucketColumns(buckets)
	readTail(r, secs, func(s ringspi.Section, sr *ringspi.Reader) { s.ReadDelta(sr, d) })
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
func marshalBlob(t *forwarding.Table) ([]byte, error) {
	secs, err := sections()
	if err != nil {
		return nil, err
	}
	tail, putTail, err := tailBytes(secs, func(s ringspi.Section) ringspi.Bytes { return s.Table(t) })
	if err != nil {
		return nil, err
	}
	ids := sortedIDs(t.Servers)
	n := len(t.Buckets)
	bucket := func(i int) forwarding.Bucket { return t.Buckets[i] }
	cols := bucketColumnsSize(n, historyEntries(n, bucket))
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
	return b, nil
}

func unmarshalBlob(gen uint32, raw []byte) (*forwarding.Table, error) {
	secs, err := sections()
	if err != nil {
		return nil, err
	}
	r := &reader{b: raw}
	servers := r.servers()
	n := r.count(bucketFixed)
	t := &forwarding.Table{Generation: gen, Buckets: make([]forwarding.Bucket, n), Servers: make(map[forwarding.ServerID]forwarding.Server, len(servers))}
	r.bucketColumns(t.Buckets)
	readTail(r, secs, func(s ringspi.Section, sr *ringspi.Reader) { s.ReadTable(sr, t) })
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
