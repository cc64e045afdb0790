package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The next hops the daemon publishes for the XDP program
// (bpf/include/nexthop.h, nexthop_table and nexthop6_table): per server
// its egress device, MTU and both MACs, read by the program in one inlined
// array lookup before it falls back to its per-CPU cache of FIB answers.
//
// An IPv4 entry is four 64-bit words: seq (low 32 bits) with the server's
// address (high 32), ifindex with MTU, and the two MACs; two entries a
// line. An IPv6 entry is eight: seq, the address in two, ifindex with MTU,
// the two MACs, padding; one a line. The program uses an entry only when
// it reads the same odd seq word before and after the rest, so every write
// here is: seq word even (invalid), the other words, seq word odd and one
// higher — each a single atomic store into the shared mapping. A packet
// reads a whole old entry, a whole new one, or none (and asks the FIB).

// ResolvedNextHop is a resolved next hop towards a server.
type ResolvedNextHop struct {
	Ifindex uint32           // egress device
	MTU     uint32           // largest outer packet the path takes
	Dst     net.HardwareAddr // the next hop's MAC
	Src     net.HardwareAddr // the egress device's MAC
}

func (h ResolvedNextHop) String() string {
	return fmt.Sprintf("dev %d mtu %d %v → %v", h.Ifindex, h.MTU, h.Src, h.Dst)
}

// ErrNextHopTableFull says the entries of a server's line are other
// servers': it is left to the program's cache and the FIB.
var ErrNextHopTableFull = errors.New("dataplane: the next-hop entries of the server's line are taken")

// nextHopTable is the Go side of nexthop_table (IPv4) or nexthop6_table.
type nextHopTable struct {
	mu         sync.Mutex
	words      *wordArray
	v6         bool
	entryWords uint32 // 4 (IPv4), 8 (IPv6)
	perLine    uint32 // entries a line: 2 (IPv4), 1 (IPv6)
	bits       uint
	closed     bool
	at         map[netip.Addr]uint32 // server → first word of its entry
}

func newNextHopTable(words *wordArray, v6 bool) (*nextHopTable, error) {
	t := &nextHopTable{words: words, v6: v6, entryWords: 4, perLine: 2, at: map[netip.Addr]uint32{}}
	if v6 {
		t.entryWords, t.perLine = 8, 1
	}
	lines := words.m.MaxEntries()
	if words.m.ValueSize() != t.entryWords*t.perLine*8 || lines&(lines-1) != 0 {
		return nil, fmt.Errorf("dataplane: next-hop table of %d-byte values × %d is not this build's layout", words.m.ValueSize(), lines)
	}
	for 1<<t.bits < lines {
		t.bits++
	}
	return t, nil
}

// line is nexthop_line_of (IPv4) or nexthop6_line_of (the fold of the
// address's four words, as flow.h addr6_fold).
func (t *nextHopTable) line(a netip.Addr) uint32 {
	if t.v6 {
		return addrLine(foldHost(a), t.bits)
	}
	b := a.As4()
	return addrLine(binary.BigEndian.Uint32(b[:]), t.bits)
}

// addrWord is an IPv4 address as the program loads it: its bytes in
// memory order, in the first word's high half.
func addrWord(a netip.Addr) uint64 {
	b := a.As4()
	return uint64(binary.LittleEndian.Uint32(b[:])) << 32
}

// nextHopAddr6Words are an IPv6 address's two words in memory order.
func nextHopAddr6Words(a netip.Addr) (uint64, uint64) {
	b := a.As16()
	return binary.LittleEndian.Uint64(b[0:8]), binary.LittleEndian.Uint64(b[8:16])
}

func macWords(dst, src net.HardwareAddr) (uint64, uint64) {
	var b [16]byte
	copy(b[0:6], dst)
	copy(b[6:12], src)
	return binary.LittleEndian.Uint64(b[0:8]), binary.LittleEndian.Uint64(b[8:16])
}

// free says whether the entry at w answers for no server.
func (t *nextHopTable) free(w uint32) bool {
	if t.v6 {
		return t.words.load(w+1) == 0 && t.words.load(w+2) == 0
	}
	return t.words.load(w)&^0xffffffff == 0
}

// seqWord is the entry's seq word for a (IPv4: with the address) and seq.
func (t *nextHopTable) seqWord(a netip.Addr, seq uint32) uint64 {
	if t.v6 {
		return uint64(seq)
	}
	return addrWord(a) | uint64(seq)
}

// publish writes h as a's next hop.
func (t *nextHopTable) publish(a netip.Addr, h ResolvedNextHop) error {
	if a.Is4() == t.v6 || !a.IsValid() || a.IsUnspecified() { // an unspecified address marks a free entry
		return fmt.Errorf("dataplane: %v is not an address of this next-hop table", a)
	}
	if len(h.Dst) != 6 || len(h.Src) != 6 || h.Ifindex == 0 {
		return fmt.Errorf("dataplane: next hop of %v incomplete: %v", a, h)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	w, ok := t.at[a]
	if !ok {
		base := t.line(a) * t.entryWords * t.perLine
		for i := uint32(0); i < t.perLine && !ok; i++ {
			if cand := base + i*t.entryWords; t.free(cand) {
				w, ok = cand, true
			}
		}
		if !ok {
			return ErrNextHopTableFull
		}
		t.at[a] = w
	}
	seq := uint32(t.words.load(w))
	invalid := (seq | 1) + 1 // even, above any odd seq read so far
	t.words.store(w, t.seqWord(a, invalid))
	f := w + 1
	if t.v6 {
		hi, lo := nextHopAddr6Words(a)
		t.words.store(w+1, hi)
		t.words.store(w+2, lo)
		f = w + 3
	}
	t.words.store(f, uint64(h.Ifindex)|uint64(h.MTU)<<32)
	m0, m1 := macWords(h.Dst, h.Src)
	t.words.store(f+1, m0)
	t.words.store(f+2, m1)
	t.words.store(w, t.seqWord(a, invalid+1))
	return nil
}

// withdraw makes a's entry invalid and frees it: its packets ask the FIB.
func (t *nextHopTable) withdraw(a netip.Addr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.withdrawLocked(a)
}

func (t *nextHopTable) withdrawLocked(a netip.Addr) {
	w, ok := t.at[a]
	if !ok || t.closed {
		return
	}
	t.withdrawAt(w)
	delete(t.at, a)
}

// withdrawAt makes the entry at word w invalid and frees it. Invalid
// first (still its server's: the address half of an IPv4 seq word kept),
// so a reader that had its odd word sees a change; then no one's. seq
// keeps growing in the free entry.
func (t *nextHopTable) withdrawAt(w uint32) {
	head := t.words.load(w)
	next := (uint32(head) | 1) + 1
	if t.v6 {
		t.words.store(w, uint64(next))
		t.words.store(w+1, 0)
		t.words.store(w+2, 0)
	} else {
		t.words.store(w, head&^0xffffffff|uint64(next))
		t.words.store(w, uint64(next))
	}
}

// withdrawAll withdraws every entry.
func (t *nextHopTable) withdrawAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for a := range t.at {
		t.withdrawLocked(a)
	}
}

// withdrawFound withdraws every valid entry found in the table's memory,
// whoever published it (a predecessor that died without withdrawing:
// nexthop_predecessor.go); the count withdrawn.
func (t *nextHopTable) withdrawFound() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for w := uint32(0); w+t.entryWords <= t.words.n; w += t.entryWords {
		head := t.words.load(w)
		if head&1 == 0 || t.free(w) {
			continue
		}
		t.withdrawAt(w)
		n++
	}
	return n
}

// retire withdraws every entry and publishes nothing any more.
func (t *nextHopTable) retire() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for a := range t.at {
		t.withdrawLocked(a)
	}
	t.closed = true // the mapping stays until close
}

// published is a's entry as the program would read it, if valid.
func (t *nextHopTable) published(a netip.Addr) (ResolvedNextHop, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.at[a]
	if !ok || t.closed {
		return ResolvedNextHop{}, false
	}
	head := t.words.load(w)
	f := w + 1
	if t.v6 {
		hi, lo := nextHopAddr6Words(a)
		if t.words.load(w+1) != hi || t.words.load(w+2) != lo {
			return ResolvedNextHop{}, false
		}
		f = w + 3
	} else if head&^0xffffffff != addrWord(a) {
		return ResolvedNextHop{}, false
	}
	if head&1 == 0 {
		return ResolvedNextHop{}, false
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[0:8], t.words.load(f+1))
	binary.LittleEndian.PutUint64(b[8:16], t.words.load(f+2))
	x := t.words.load(f)
	return ResolvedNextHop{Ifindex: uint32(x), MTU: uint32(x >> 32), Dst: net.HardwareAddr(b[0:6:6]), Src: net.HardwareAddr(b[6:12:12])}, true
}

// entries are the table's valid entries, read from its memory (of a
// pinned program: the map read-only).
func (t *nextHopTable) entries() []NextHop {
	var out []NextHop
	for w := uint32(0); w+t.entryWords <= t.words.n; w += t.entryWords {
		head := t.words.load(w)
		if head&1 == 0 || t.free(w) {
			continue
		}
		var a netip.Addr
		f := w + 1
		if t.v6 {
			var b [16]byte
			binary.LittleEndian.PutUint64(b[0:8], t.words.load(w+1))
			binary.LittleEndian.PutUint64(b[8:16], t.words.load(w+2))
			a, f = netip.AddrFrom16(b), w+3
		} else {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], uint32(head>>32))
			a = netip.AddrFrom4(b)
		}
		var mac [8]byte
		binary.LittleEndian.PutUint64(mac[:], t.words.load(f+1))
		x := t.words.load(f)
		out = append(out, NextHop{Addr: a, Ifindex: uint32(x), MTU: uint32(x >> 32), MAC: net.HardwareAddr(mac[0:6]).String(), Current: true})
	}
	return out
}

func (t *nextHopTable) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	if t.words.mem != nil {
		unix.Munmap(t.words.mem)
		t.words.mem = nil
	}
}

// nextHopTables are both families' tables.
type nextHopTables struct{ v4, v6 *nextHopTable }

func (n *nextHopTables) of(a netip.Addr) *nextHopTable {
	if a.Is4() {
		return n.v4
	}
	return n.v6
}

// PublishNextHop publishes h as the next hop of server a: the program
// sends a's packets by it without asking the FIB. ErrNextHopTableFull
// leaves a to the FIB.
func (m *Mux) PublishNextHop(a netip.Addr, h ResolvedNextHop) error {
	return m.nextHops.of(a.Unmap()).publish(a.Unmap(), h)
}

// WithdrawNextHop withdraws a's published next hop (none: nothing to do).
func (m *Mux) WithdrawNextHop(a netip.Addr) { m.nextHops.of(a.Unmap()).withdraw(a.Unmap()) }

// WithdrawAllNextHops withdraws every published next hop.
func (m *Mux) WithdrawAllNextHops() {
	m.nextHops.v4.withdrawAll()
	m.nextHops.v6.withdrawAll()
}

// RetireNextHops withdraws every published next hop for good: the daemon
// stops following them while its (pinned) program may forward on, which
// then asks the FIB for every server.
func (m *Mux) RetireNextHops() {
	m.nextHops.v4.retire()
	m.nextHops.v6.retire()
}

// PublishedNextHop is a's published next hop, if it has a valid one.
func (m *Mux) PublishedNextHop(a netip.Addr) (ResolvedNextHop, bool) {
	return m.nextHops.of(a.Unmap()).published(a.Unmap())
}

// PublishedNextHops lists the servers with a published next hop.
func (m *Mux) PublishedNextHops() []netip.Addr {
	var out []netip.Addr
	for _, t := range []*nextHopTable{m.nextHops.v4, m.nextHops.v6} {
		t.mu.Lock()
		for a := range t.at {
			out = append(out, a)
		}
		t.mu.Unlock()
	}
	return out
}

// mapNextHopTables maps both families' tables.
func mapNextHopTables(m4, m6 *ebpf.Map) (nextHopTables, error) {
	var n nextHopTables
	for _, x := range []struct {
		m  *ebpf.Map
		v6 bool
		to **nextHopTable
	}{{m4, false, &n.v4}, {m6, true, &n.v6}} {
		words, err := mapWords(x.m)
		if err == nil {
			if *x.to, err = newNextHopTable(words, x.v6); err != nil {
				unix.Munmap(words.mem)
			}
		}
		if err != nil {
			if n.v4 != nil {
				n.v4.close()
			}
			return nextHopTables{}, err
		}
	}
	return n, nil
}
