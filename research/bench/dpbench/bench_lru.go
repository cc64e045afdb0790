package dpbench

import (
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The benchmark build's reference connection table
// (bpf/bench/conntrack_lru_bench.h): the LRU hash the Maglev strategy used
// before its set-associative table, measured beside it in one process
// (rows maglev-lru). Sized as it was: one LRU list per CPU, each a share of
// the entries, and shares kept usable.
const ctLRUMinPerCPU = 16

// sizeConnTrackLRU sizes the reference table in spec before the mux is
// loaded (the outer map's inner template must match the table installed
// later): lruEntries, or the connection table's entries (0: the mux's
// default, 1M), at least ctLRUMinPerCPU a CPU.
func sizeConnTrackLRU(spec *ebpf.CollectionSpec, ctEntries, lruEntries int) (uint32, error) {
	lru := spec.Maps["conntrack_lru_bench"]
	if lru == nil || lru.InnerMap == nil {
		return 0, fmt.Errorf("the mux's benchmark build has no reference connection table")
	}
	if ctEntries <= 0 {
		ctEntries = 1 << 20 // dataplane.MuxOptions.ConnTrackEntries' default
	}
	if lruEntries <= 0 {
		lruEntries = ctEntries
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return 0, err
	}
	n := uint32(max(lruEntries, ctLRUMinPerCPU*cpus))
	lru.InnerMap.MaxEntries = n
	return n, nil
}

// installConnTrackLRU creates the reference table of n entries and puts it
// where maglev_lru_bench reads it.
func (b *benchMux) installConnTrackLRU(n uint32) error {
	t, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 16, ValueSize: 8, MaxEntries: n,
		Flags: unix.BPF_F_NO_COMMON_LRU})
	if err != nil {
		return fmt.Errorf("reference connection table of %d entries: %w", n, err)
	}
	if err := b.x.CtLRU.Put(uint32(0), t); err != nil {
		t.Close()
		return fmt.Errorf("installing the reference connection table: %w", err)
	}
	b.lru = t
	return nil
}

// MaglevLRUProgram is the benchmark program with the reference table,
// MaglevLRUSingle the production program with it, for the per-packet
// method.
func (b *benchMux) MaglevLRUProgram() *ebpf.Program { return b.x.MaglevLRU }
func (b *benchMux) MaglevLRUSingle() *ebpf.Program  { return b.x.MaglevLRUOne }

// ConnTrackLRUEntries counts the reference table's entries.
func (b *benchMux) ConnTrackLRUEntries() (int, error) {
	if b.lru == nil {
		return 0, fmt.Errorf("no reference connection table installed")
	}
	n := 0
	var k [16]byte
	var v [8]byte
	it := b.lru.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	return n, it.Err()
}
