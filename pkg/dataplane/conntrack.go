package dataplane

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// The connection table of the Maglev and AWFD strategies
// (bpf/include/conntrack.h): buckets of ctWays 16-byte slots, one 64-byte
// cache line each, in chunks of at most ctChunkBuckets buckets, each chunk
// the one element of a small array (kmalloc'd by the kernel: huge pages;
// when it finds no 32 contiguous KiB it falls back to vmalloc, slower per
// packet, not wrong) in a slot of the outer map "conntrack". The end of chunk 0 keeps the
// table's hash seed, so that a successor daemon adopting the pinned table
// hashes as it was filled.
const (
	ctWays         = 4
	ctSlotBytes    = 16
	ctBucketBytes  = ctWays * ctSlotBytes
	ctChunkBuckets = 500                                  // CT_CHUNK_BUCKETS
	ctChunkBytes   = (ctChunkBuckets + 1) * ctBucketBytes // CT_CHUNK_BYTES
	ctSeedAt       = ctChunkBytes - 8
	ctMinBuckets   = 4
	ctMaxBuckets   = 1 << 26
)

// ctLayout is the table's shape: chunks of buckets each.
type ctLayout struct {
	chunks, buckets uint32 // buckets a chunk
	pad             uint32 // bytes before a chunk's first bucket: its cache line
}

// ctLayoutFor shapes a table meant to remember entries connections: as many
// 4-slot buckets as connections (at least ctMinBuckets), so ctWays slots a
// connection, in as few chunks as hold them. A set-associative table
// cannot fill every slot: with n connections hashed over n buckets of 4,
// about 0.4% of them find their bucket full (Poisson, mean 1) and are
// remembered only while their bucket has room (conntrack.h). 64 bytes a
// bucket: about 64 MiB for the default 1M, less than the LRU hash of 1M
// entries this replaced (~72-80 bytes an entry with its bucket array).
func ctLayoutFor(entries int) ctLayout {
	b := uint32(min(max(entries, ctMinBuckets), ctMaxBuckets))
	chunks := (b + ctChunkBuckets - 1) / ctChunkBuckets
	return ctLayout{chunks: chunks, buckets: (b + chunks - 1) / chunks, pad: ctPad()}
}

// ctPad is how far into an array element the next cache line starts: the
// element follows struct bpf_array in the same allocation (312 bytes on
// 6.18). 0 when the kernel's BTF does not say (buckets then straddle two
// lines: slower, not wrong).
func ctPad() uint32 {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		return 0
	}
	var arr *btf.Struct
	if err := spec.TypeByName("bpf_array", &arr); err != nil {
		return 0
	}
	// The elements are the last member (a union holding value[]).
	if len(arr.Members) == 0 {
		return 0
	}
	off := uint32(arr.Members[len(arr.Members)-1].Offset.Bytes())
	return (64 - off%64) % 64
}

// ctSpec is a chunk's definition.
func ctSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: ctChunkBytes, MaxEntries: 1}
}

// maglevFastOff turns off the Maglev strategy's straight-line path for a
// connection-table hit (bpf/strategy/maglev_fast.h): the tests compare the
// program with and without it.
var maglevFastOff = false

// sizeConnTrack shapes the connection table in spec (before pinned maps
// are matched against it: the outer map's size is the chunk count).
func (m *Mux) sizeConnTrack(spec *ebpf.CollectionSpec, entries int) error {
	m.ct = ctLayoutFor(entries)
	if maglevFastOff {
		if err := spec.Variables["maglev_fast_path"].Set(uint32(0)); err != nil {
			return fmt.Errorf("maglev_fast_path: %w", err)
		}
	}
	spec.Maps["conntrack"].MaxEntries = m.ct.chunks
	spec.Maps["conntrack"].InnerMap = ctSpec()
	for name, v := range map[string]uint32{"ct_chunks": m.ct.chunks, "ct_chunk_buckets": m.ct.buckets, "ct_pad": m.ct.pad} {
		if err := spec.Variables[name].Set(v); err != nil {
			return err
		}
	}
	return nil
}

// prepareConnTrack chooses the table's seed before the program is loaded:
// the seed of the table a predecessor pinned (adopted["conntrack"]) when
// that table has this build's layout and size, a fresh random one
// otherwise. A pinned outer map that cannot be shown to take such a table
// is not adopted: the connections start over in a new table.
func (m *Mux) prepareConnTrack(spec *ebpf.CollectionSpec, adopted map[string]*ebpf.Map) error {
	seed, ok, fresh := m.adoptedSeed(adopted["conntrack"])
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
	return spec.Variables["ct_seed"].Set(seed)
}

// adoptedSeed is the seed of the table held by a pinned outer map, and
// whether that table has this build's layout and size. An outer map
// without a table yet (no Maglev or AWFD instance so far) is usable when
// it accepts a chunk of this definition — the kernel checks it against the
// outer map's own — and then has a fresh seed.
func (m *Mux) adoptedSeed(outer *ebpf.Map) (seed uint32, ok, fresh bool) {
	if outer == nil || outer.MaxEntries() != m.ct.chunks {
		return 0, false, false
	}
	want := ctSpec()
	var id ebpf.MapID
	if err := outer.Lookup(uint32(0), &id); errors.Is(err, ebpf.ErrKeyNotExist) {
		return 0, acceptsTable(outer, want), true
	} else if err != nil {
		return 0, false, false
	}
	// Every chunk there, of this definition; and the layout the seed was
	// written with (chunks, buckets, pad: a table made by another build
	// or size hashes elsewhere).
	var first []byte
	for c := uint32(0); c < m.ct.chunks; c++ {
		v, err := chunkOf(outer, c, want)
		if err != nil {
			return 0, false, false
		}
		if c == 0 {
			first = v
		}
	}
	if binary.NativeEndian.Uint32(first[ctSeedAt+4:]) != m.ct.stamp() {
		return 0, false, false
	}
	return binary.NativeEndian.Uint32(first[ctSeedAt:]), true, false
}

// stamp identifies the layout next to the seed.
func (l ctLayout) stamp() uint32 { return l.buckets<<6 | l.pad }

// chunkOf reads chunk c of the table in outer, checking its definition.
func chunkOf(outer *ebpf.Map, c uint32, want *ebpf.MapSpec) ([]byte, error) {
	var id ebpf.MapID
	if err := outer.Lookup(c, &id); err != nil {
		return nil, err
	}
	t, err := ebpf.NewMapFromID(id)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	if t.Type() != want.Type || t.KeySize() != want.KeySize || t.ValueSize() != want.ValueSize ||
		t.MaxEntries() != want.MaxEntries || t.Flags() != want.Flags {
		return nil, fmt.Errorf("connection table chunk %d: another layout", c)
	}
	v := make([]byte, ctChunkBytes)
	if err := t.Lookup(uint32(0), v); err != nil {
		return nil, err
	}
	return v, nil
}

// acceptsTable tries a chunk of want's definition in an empty outer map
// and takes it out again.
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

// ensureConnTrack creates the connection table on first use, installing
// its chunks in one batch: every single update of a map-in-map waits for an
// RCU grace period (~15 ms here), which for the 2,098 chunks of the default
// size took half a minute; a batch waits once.
func (m *Mux) ensureConnTrack() error {
	if m.ctReady {
		return nil
	}
	chunks := make([]*ebpf.Map, 0, m.ct.chunks)
	defer func() {
		for _, t := range chunks {
			t.Close() // the outer map holds them once installed
		}
	}()
	keys, fds := make([]uint32, m.ct.chunks), make([]uint32, m.ct.chunks)
	for c := range m.ct.chunks {
		t, err := ebpf.NewMap(ctSpec())
		if err != nil {
			return fmt.Errorf("connection table chunk %d of %d: %w", c, m.ct.chunks, err)
		}
		chunks = append(chunks, t)
		keys[c], fds[c] = c, uint32(t.FD())
	}
	v := make([]byte, ctChunkBytes)
	binary.NativeEndian.PutUint32(v[ctSeedAt:], m.ctSeed)
	binary.NativeEndian.PutUint32(v[ctSeedAt+4:], m.ct.stamp())
	if err := chunks[0].Put(uint32(0), v); err != nil {
		return fmt.Errorf("connection table seed: %w", err)
	}
	n, err := m.objs.Conntrack.BatchUpdate(keys, fds, nil)
	if err == nil && n != len(keys) {
		err = errors.New("short batch")
	}
	if err != nil {
		return fmt.Errorf("installing the connection table: %d of %d chunks: %w", n, len(keys), err)
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
	n := 0
	for c := uint32(0); c < m.ct.chunks; c++ {
		v, err := chunkOf(m.objs.Conntrack, c, ctSpec())
		if err != nil {
			return 0, err
		}
		n += ctOccupied(v[m.ct.pad:], m.ct.buckets)
	}
	return n, nil
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
func (m *Mux) ConnTrackCapacity() int { return int(m.ct.chunks*m.ct.buckets) * ctWays }
