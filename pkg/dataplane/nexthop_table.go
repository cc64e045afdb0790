package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"golang.org/x/sys/unix"
)

// The next hops the daemon publishes for the XDP program
// (bpf/include/nexthop.h, nexthop_table): per IPv4 server its egress
// device, MTU and both MACs, read by the program in one inlined array
// lookup before it falls back to its per-CPU cache of FIB answers.
//
// An entry is four 64-bit words: seq (low 32 bits) with the server's
// address (high 32), ifindex with MTU, and the two MACs. The program uses
// an entry only when it reads the same odd first word before and after the
// rest, so every write here is: first word even (invalid), the other
// words, first word odd and one higher — each a single atomic store into
// the shared mapping. A packet reads a whole old entry, a whole new one,
// or none (and asks the FIB).

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

// nextHopEntryWords is the size of one entry (struct nexthop_entry).
const (
	nextHopEntryWords = 4
	nextHopLineWords  = 2 * nextHopEntryWords
	nextHopHashMul    = 2654435761 // nexthop_line_of's multiplier
)

// ErrNextHopTableFull says both entries of a server's line are other
// servers': it is left to the program's cache and the FIB.
var ErrNextHopTableFull = errors.New("dataplane: both next-hop entries of the server's line are taken")

// nextHopTable is the Go side of nexthop_table.
type nextHopTable struct {
	mu     sync.Mutex
	words  *wordArray
	bits   uint
	closed bool
	at     map[netip.Addr]uint32 // server → first word of its entry
}

func newNextHopTable(words *wordArray) (*nextHopTable, error) {
	lines := words.m.MaxEntries()
	if words.m.ValueSize() != nextHopLineWords*8 || lines&(lines-1) != 0 {
		return nil, fmt.Errorf("dataplane: nexthop_table of %d-byte values × %d is not this build's layout", words.m.ValueSize(), lines)
	}
	bits := uint(0)
	for 1<<bits < lines {
		bits++
	}
	return &nextHopTable{words: words, bits: bits, at: map[netip.Addr]uint32{}}, nil
}

// line is nexthop_line_of.
func (t *nextHopTable) line(a netip.Addr) uint32 {
	b := a.As4()
	return (binary.BigEndian.Uint32(b[:]) * nextHopHashMul) >> (32 - t.bits)
}

// addrWord is the address as the program loads it: its bytes in memory
// order, in the first word's high half.
func addrWord(a netip.Addr) uint64 {
	b := a.As4()
	return uint64(binary.LittleEndian.Uint32(b[:])) << 32
}

func macWords(dst, src net.HardwareAddr) (uint64, uint64) {
	var b [16]byte
	copy(b[0:6], dst)
	copy(b[6:12], src)
	return binary.LittleEndian.Uint64(b[0:8]), binary.LittleEndian.Uint64(b[8:16])
}

// publish writes h as a's next hop.
func (t *nextHopTable) publish(a netip.Addr, h ResolvedNextHop) error {
	if !a.Is4() {
		return fmt.Errorf("dataplane: next hops of IPv4 servers only are published (%v)", a)
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
		base := t.line(a) * nextHopLineWords
		for _, cand := range []uint32{base, base + nextHopEntryWords} {
			if t.words.load(cand)&^0xffffffff == 0 { // no server's: free
				w, ok = cand, true
				break
			}
		}
		if !ok {
			return ErrNextHopTableFull
		}
		t.at[a] = w
	}
	head := t.words.load(w)
	seq := uint32(head)
	invalid := (seq | 1) + 1 // even, above any odd seq read so far
	t.words.store(w, addrWord(a)|uint64(invalid))
	t.words.store(w+1, uint64(h.Ifindex)|uint64(h.MTU)<<32)
	m0, m1 := macWords(h.Dst, h.Src)
	t.words.store(w+2, m0)
	t.words.store(w+3, m1)
	t.words.store(w, addrWord(a)|uint64(invalid+1))
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
	seq := uint32(t.words.load(w))
	// Still a's (even) first, so a reader that had its odd word sees a
	// change; then no one's. seq keeps growing in the free entry.
	t.words.store(w, addrWord(a)|uint64((seq|1)+1))
	t.words.store(w, uint64((seq|1)+1))
	delete(t.at, a)
}

// withdrawAll withdraws every entry.
func (t *nextHopTable) withdrawAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for a := range t.at {
		t.withdrawLocked(a)
	}
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
	if head&1 == 0 || head&^0xffffffff != addrWord(a) {
		return ResolvedNextHop{}, false
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[0:8], t.words.load(w+2))
	binary.LittleEndian.PutUint64(b[8:16], t.words.load(w+3))
	f := t.words.load(w + 1)
	return ResolvedNextHop{Ifindex: uint32(f), MTU: uint32(f >> 32), Dst: net.HardwareAddr(b[0:6:6]), Src: net.HardwareAddr(b[6:12:12])}, true
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

// PublishNextHop publishes h as the next hop of IPv4 server a: the program
// sends a's packets by it without asking the FIB. ErrNextHopTableFull
// leaves a to the FIB.
func (m *Mux) PublishNextHop(a netip.Addr, h ResolvedNextHop) error { return m.nextHops.publish(a, h) }

// WithdrawNextHop withdraws a's published next hop (none: nothing to do).
func (m *Mux) WithdrawNextHop(a netip.Addr) { m.nextHops.withdraw(a) }

// WithdrawAllNextHops withdraws every published next hop: after a route
// change, until the daemon has resolved them again, packets ask the FIB.
func (m *Mux) WithdrawAllNextHops() { m.nextHops.withdrawAll() }

// RetireNextHops withdraws every published next hop for good: the daemon
// stops following them while its (pinned) program may forward on, which
// then asks the FIB for every server.
func (m *Mux) RetireNextHops() { m.nextHops.retire() }

// PublishedNextHop is a's published next hop, if it has a valid one.
func (m *Mux) PublishedNextHop(a netip.Addr) (ResolvedNextHop, bool) { return m.nextHops.published(a) }

// PublishedNextHops lists the servers with a published next hop.
func (m *Mux) PublishedNextHops() []netip.Addr {
	t := m.nextHops
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]netip.Addr, 0, len(t.at))
	for a := range t.at {
		out = append(out, a)
	}
	return out
}
