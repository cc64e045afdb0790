package dataplane

import (
	"encoding/binary"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// chainTable is one instance's table of bucket histories in the kernel
// (chain_tables in bpf/include/mux_maps.h). A bucket word names its history
// by a 16-bit reference; each distinct history is stored once, interned,
// with a count of the bucket words naming it, so a rebalance that gives a
// thousand buckets the same history writes one entry.
//
// Entries are immutable while named: a packet may read a bucket word and
// then its entry, and the daemon may rewrite the word in between, so an
// entry's slot is reused only once no word names it, and as late as
// possible — slots never used come first, then freed slots oldest-freed
// first — and never before an RCU grace period has passed since it was
// freed (graceWait): a packet that read an old word finishes before the
// entry it names changes, however long it was held up (a preempted test
// run, a slow softirq). A history that is named again before its slot is
// reused gets its old slot back without a write.
type chainTable struct {
	m        *ebpf.Map
	size     uint32
	ref      map[forwarding.Chain]uint16 // interned histories (also freed ones not yet reused)
	chains   []forwarding.Chain          // by reference
	count    []uint32                    // bucket words naming each reference
	free     []freed                     // references freed before the last grace period, oldest first
	retired  []freed                     // references freed since the last grace period
	freedAt  []uint32                    // by reference: how many times it was freed (stale list entries differ)
	grace    func() error                // graceWait; tests count the waits
	next     uint32                      // first reference never used (0 means "no history")
	overflow uint64                      // histories left out because the table was full
}

// freed is a reference on a free list, as of its n-th release: an entry
// whose reference was named and freed again since is stale.
type freed struct {
	ref uint16
	n   uint32
}

// chainTableSize: during a delta the old and the new histories of every
// bucket may be named at once, so 2B+1 references (0 is "none") always
// suffice; a reference has 16 bits.
func chainTableSize(cfg forwarding.Instance) uint32 {
	if !muxStrategyOf(cfg).Histories() {
		return 1 // no histories
	}
	return uint32(min(uint64(cfg.Buckets)*2+1, 1<<16))
}

func newChainTable(size uint32) (*chainTable, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: size, Flags: unix.BPF_F_INNER_MAP})
	if err != nil {
		return nil, fmt.Errorf("creating chain table of %d entries: %w", size, err)
	}
	return &chainTable{m: m, size: size, ref: map[forwarding.Chain]uint16{}, chains: make([]forwarding.Chain, size),
		count: make([]uint32, size), freedAt: make([]uint32, size), next: 1, grace: graceWait}, nil
}

// chainEntry is struct chain_entry: u8 n, u8 pad, u16 ids[6], u16 pad.
func chainEntry(c forwarding.Chain) [16]byte {
	var b [16]byte
	b[0] = byte(c.Len())
	for i, id := range c {
		binary.LittleEndian.PutUint16(b[2+2*i:], uint16(id))
	}
	return b
}

// acquire returns the reference of history h, storing it if it is new, and
// counts one more bucket word naming it. The empty history is reference 0.
// When the table is full the bucket goes without history (ok false, and
// counted): it forwards, but its moved connections cannot be chained.
func (c *chainTable) acquire(h forwarding.Chain) (uint16, bool, error) {
	if h.Len() == 0 {
		return 0, true, nil
	}
	if r, ok := c.ref[h]; ok {
		c.count[r]++
		return r, true, nil
	}
	r, ok, err := c.slot()
	if err != nil {
		return 0, false, err
	}
	if !ok {
		c.overflow++
		return 0, false, nil
	}
	e := chainEntry(h)
	if err := c.m.Put(uint32(r), e[:]); err != nil {
		return 0, false, fmt.Errorf("writing chain entry %d: %w", r, err)
	}
	delete(c.ref, c.chains[r]) // the freed history it held, if any
	c.chains[r], c.ref[h], c.count[r] = h, r, 1
	return r, true, nil
}

// slot picks the reference for a new history: never used first, then the
// one freed longest ago that is still free.
func (c *chainTable) slot() (uint16, bool, error) {
	if c.next < c.size {
		c.next++
		return uint16(c.next - 1), true, nil
	}
	for {
		for len(c.free) > 0 {
			f := c.free[0]
			c.free = c.free[1:]
			// Stale when named again since (count) or freed again
			// since, and so retired anew (freedAt).
			if c.count[f.ref] == 0 && c.freedAt[f.ref] == f.n {
				return f.ref, true, nil
			}
		}
		if len(c.retired) == 0 {
			return 0, false, nil
		}
		// Only slots freed since the last grace period are left: wait
		// until no packet can still read them, then reuse the oldest.
		if err := c.grace(); err != nil {
			return 0, false, err
		}
		c.free, c.retired = c.retired, nil
	}
}

// release counts one bucket word fewer naming r.
func (c *chainTable) release(r uint16) {
	if r == 0 || c.count[r] == 0 {
		return
	}
	c.count[r]--
	if c.count[r] == 0 {
		c.freedAt[r]++
		c.retired = append(c.retired, freed{r, c.freedAt[r]})
	}
}

// used is how many references bucket words name now.
func (c *chainTable) used() int {
	n := 0
	for _, k := range c.count {
		if k > 0 {
			n++
		}
	}
	return n
}

func (c *chainTable) close() {
	if c != nil {
		c.m.Close()
	}
}

// bucketWord encodes b as the whole 64-bit bucket word the mux reads with
// one load (bpf/include/mux_maps.h), the side word of a bucket with a
// history (buckets.go): bits 0–15 the current owner, 16–31 the reference of
// its history in the chain table, 32–63 the change time. Storing it as one
// aligned word is what makes a bucket update impossible to read torn.
func bucketWord(b forwarding.Bucket, ref uint16) uint64 {
	return uint64(b.Current) | uint64(ref)<<16 | uint64(b.Changed)<<32
}

// wordRef is the chain reference a bucket word names.
func wordRef(w uint64) uint16 { return uint16(w >> 16) }
