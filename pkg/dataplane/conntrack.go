package dataplane

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The connection table of the Maglev and AWFD strategies
// (bpf/include/conntrack.h): buckets of ctWays 16-byte slots, one 64-byte
// cache line each, in an mmapable array behind the one-slot outer map
// "conntrack"; the element after the last bucket keeps the table's hash
// seed, so that a successor daemon adopting the pinned table hashes as it
// was filled.
const (
	ctWays        = 4
	ctSlotBytes   = 16
	ctBucketBytes = ctWays * ctSlotBytes
	ctMinBuckets  = 4
)

// ctBucketsFor is the number of buckets for a table meant to remember
// entries connections: the smallest power of two not below entries (at
// least ctMinBuckets), so ctWays slots per connection asked for. A
// set-associative table cannot fill every slot: with entries connections
// hashed over entries buckets of 4, about 0.4% of them find their bucket
// full (Poisson, mean 1) and are remembered only while their bucket has
// room (conntrack.h). 64 bytes a bucket: 64 MiB for the default 1M, less
// than the LRU hash of 1M entries this replaced (~72-80 bytes an entry
// with its bucket array).
func ctBucketsFor(entries int) uint32 {
	b := uint64(max(entries, ctMinBuckets))
	b = min(b, 1<<26)
	if b&(b-1) != 0 {
		b = 1 << bits.Len64(b)
	}
	return uint32(b)
}

// ctSpec is the inner table's definition for b buckets.
func ctSpec(b uint32) *ebpf.MapSpec {
	return &ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: ctBucketBytes, MaxEntries: b + 1, Flags: unix.BPF_F_MMAPABLE}
}

// prepareConnTrack sizes the connection table in spec and chooses its seed
// before the program is loaded: the seed of the table a predecessor pinned
// (adopted["conntrack"]) when that table has this build's layout and this
// size, a fresh random one otherwise. A pinned outer map that cannot be
// shown to hold such a table (another layout or size, or none yet) is not
// adopted: the connections start over in a new table.
func (m *Mux) prepareConnTrack(spec *ebpf.CollectionSpec, entries, lruEntries int, adopted map[string]*ebpf.Map) error {
	m.ctBuckets = ctBucketsFor(entries)
	want := ctSpec(m.ctBuckets)
	spec.Maps["conntrack"].InnerMap = want.Copy()
	if lru := spec.Maps["conntrack_lru_bench"]; lru != nil { // the benchmark's reference (conntrack_bench.go)
		if lruEntries <= 0 {
			lruEntries = entries
		}
		m.ctLRUEntries = uint32(max(lruEntries, ctLRUMinPerCPU*possibleCPUs()))
		lru.InnerMap.MaxEntries = m.ctLRUEntries
	}
	seed, ok, fresh := adoptedSeed(adopted["conntrack"], want)
	if outer := adopted["conntrack"]; outer != nil && !ok {
		outer.Close()
		delete(adopted, "conntrack")
	}
	if ok && !fresh {
		m.ctReady = true
	} else {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("connection table seed: %w", err)
		}
		seed = binary.NativeEndian.Uint32(b[:])
	}
	m.ctSeed = seed
	if err := spec.Variables["ct_bucket_mask"].Set(m.ctBuckets - 1); err != nil {
		return err
	}
	return spec.Variables["ct_seed"].Set(seed)
}

// adoptedSeed is the seed of the table held by a pinned outer map, and
// whether that table has want's layout and size. An outer map without a
// table yet (no Maglev or AWFD instance so far) is usable when it accepts
// a table of want's definition — the kernel checks it against the outer
// map's own — and then has a fresh seed (ok, seed 0: the caller draws).
func adoptedSeed(outer *ebpf.Map, want *ebpf.MapSpec) (seed uint32, ok, fresh bool) {
	if outer == nil {
		return 0, false, false
	}
	var id ebpf.MapID
	if err := outer.Lookup(uint32(0), &id); errors.Is(err, ebpf.ErrKeyNotExist) {
		return 0, acceptsTable(outer, want), true
	} else if err != nil {
		return 0, false, false
	}
	t, err := ebpf.NewMapFromID(id)
	if err != nil {
		return 0, false, false
	}
	defer t.Close()
	if t.Type() != want.Type || t.KeySize() != want.KeySize || t.ValueSize() != want.ValueSize ||
		t.MaxEntries() != want.MaxEntries || t.Flags() != want.Flags {
		return 0, false, false
	}
	v := make([]byte, ctBucketBytes)
	if err := t.Lookup(want.MaxEntries-1, v); err != nil {
		return 0, false, false
	}
	return binary.NativeEndian.Uint32(v), true, false
}

// acceptsTable tries want's table in an empty outer map and takes it out
// again.
func acceptsTable(outer *ebpf.Map, want *ebpf.MapSpec) bool {
	t, err := ebpf.NewMap(want)
	if err != nil {
		return false
	}
	defer t.Close()
	if err := outer.Update(uint32(0), t, ebpf.UpdateAny); err != nil {
		return false
	}
	return outer.Delete(uint32(0)) == nil
}

// ensureConnTrack creates the connection table on first use.
func (m *Mux) ensureConnTrack() error {
	if m.ctReady {
		return nil
	}
	t, err := ebpf.NewMap(ctSpec(m.ctBuckets))
	if err != nil {
		return fmt.Errorf("connection table of %d buckets: %w", m.ctBuckets, err)
	}
	defer t.Close() // the outer map holds it once installed
	seed := make([]byte, ctBucketBytes)
	binary.NativeEndian.PutUint32(seed, m.ctSeed)
	if err := t.Put(m.ctBuckets, seed); err != nil {
		return fmt.Errorf("connection table seed: %w", err)
	}
	if err := m.ensureConnTrackLRU(); err != nil {
		return err
	}
	if err := m.objs.Conntrack.Put(uint32(0), t); err != nil {
		return fmt.Errorf("installing the connection table: %w", err)
	}
	m.ctReady = true
	return nil
}

// ConnTrackEntries is how many connections the table remembers now (its
// occupied slots).
func (m *Mux) ConnTrackEntries() (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ctReady {
		return 0, nil
	}
	var id ebpf.MapID
	if err := m.objs.Conntrack.Lookup(uint32(0), &id); err != nil {
		return 0, err
	}
	t, err := ebpf.NewMapFromID(id)
	if err != nil {
		return 0, err
	}
	defer t.Close()
	a, err := mapWordsProt(t, unix.PROT_READ)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(a.mem)
	return ctOccupied(a.mem, m.ctBuckets), nil
}

// ctOccupied counts the slots with a server in the first buckets of mem.
func ctOccupied(mem []byte, buckets uint32) int {
	n := 0
	for s := 0; s < int(buckets)*ctWays; s++ {
		// The server id: bytes 14-15 of the slot.
		if binary.NativeEndian.Uint16(mem[s*ctSlotBytes+14:]) != 0 {
			n++
		}
	}
	return n
}

// ConnTrackCapacity is how many connections the table can hold.
func (m *Mux) ConnTrackCapacity() int { return int(m.ctBuckets) * ctWays }

func possibleCPUs() int {
	n, err := ebpf.PossibleCPU()
	if err != nil {
		return 1
	}
	return n
}

var errNoLRU = errors.New("dataplane: not a benchmark build: no reference connection table")
