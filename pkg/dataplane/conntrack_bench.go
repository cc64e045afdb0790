package dataplane

import (
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The benchmark build's reference connection table
// (bpf/bench/conntrack_lru_bench.h): the LRU hash the Maglev strategy used
// before its set-associative table, measured beside it in one process
// (research/bench/dpbench rows maglev-lru). Sized as it was: one LRU list per CPU,
// each a share of the entries, and shares kept usable.
const ctLRUMinPerCPU = 16

// ensureConnTrackLRU installs the reference table (benchmark build only).
func (m *Mux) ensureConnTrackLRU() error {
	if m.bench.CtLRU == nil {
		return nil
	}
	t, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.LRUHash, KeySize: 16, ValueSize: 8, MaxEntries: m.ctLRUEntries,
		Flags: unix.BPF_F_NO_COMMON_LRU})
	if err != nil {
		return fmt.Errorf("reference connection table of %d entries: %w", m.ctLRUEntries, err)
	}
	defer t.Close()
	if err := m.bench.CtLRU.Put(uint32(0), t); err != nil {
		return fmt.Errorf("installing the reference connection table: %w", err)
	}
	return nil
}

// MaglevLRUProgram is the benchmark program with the reference table
// (BenchProgram otherwise), MaglevLRUSingle the production program with
// it, for the per-packet method.
func (m *Mux) MaglevLRUProgram() *ebpf.Program { return m.bench.MaglevLRU }
func (m *Mux) MaglevLRUSingle() *ebpf.Program  { return m.bench.MaglevLRUOne }

// ConnTrackLRUEntries counts the reference table's entries.
func (m *Mux) ConnTrackLRUEntries() (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bench.CtLRU == nil {
		return 0, errNoLRU
	}
	if !m.ctReady {
		return 0, nil
	}
	var id ebpf.MapID
	if err := m.bench.CtLRU.Lookup(uint32(0), &id); err != nil {
		return 0, err
	}
	t, err := ebpf.NewMapFromID(id)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	n := 0
	var k [16]byte
	var v [8]byte
	it := t.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	return n, it.Err()
}

// MaglevLRUProgram is the baseline's program with the reference
// connection table; nil when the baseline has none.
func (b *MuxBaseline) MaglevLRUProgram() *ebpf.Program { return b.coll.Programs["maglev_lru_bench"] }

// MaglevLRUSingle is the baseline's per-packet program of the same
// (nil when the baseline has none).
func (b *MuxBaseline) MaglevLRUSingle() *ebpf.Program { return b.coll.Programs["maglev_lru_single"] }
