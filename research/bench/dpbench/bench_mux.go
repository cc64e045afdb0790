package dpbench

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// The benchmark build of the mux (bpf/bench/mux_bench.c, muxbench_bpfel.o
// here): the production program plus wrappers that undo each
// encapsulation, floors, probes and the Maglev rows' reference table.
// dataplane.LoadMux loads it as its own build (MuxOptions.Spec), so every
// program here runs on the mux's maps; its extra programs and variables
// are read from the loaded collection by their names in the object.

// muxExtras are the programs, variables and maps the benchmark build adds.
type muxExtras struct {
	Bench  *ebpf.Program `ebpf:"beamer_mux_bench"`
	Empty  *ebpf.Program `ebpf:"empty_bench"`
	Floor  *ebpf.Program `ebpf:"floor_bench"`
	Encap  *ebpf.Program `ebpf:"encap_floor_bench"`
	Plain  *ebpf.Program `ebpf:"encap_floor_plain_bench"`
	Random *ebpf.Program `ebpf:"encap_floor_random_bench"`
	// The beamer-floor row's program and what it reads (SetMinimal).
	Minimal *ebpf.Program `ebpf:"beamer_minimal_bench"`
	Counted *ebpf.Program `ebpf:"beamer_minimal_counted_bench"`
	// The beamer-floor-moved4 row's (SetMinimalHistory).
	MinMoved4  *ebpf.Program  `ebpf:"beamer_minimal_moved4_bench"`
	MinChains  *ebpf.Variable `ebpf:"bench_min_chain_base"`
	MinMACs    *ebpf.Variable `ebpf:"bench_min_mac_base"`
	MinVIP     *ebpf.Variable `ebpf:"bench_min_vip"`
	MinBuckets *ebpf.Variable `ebpf:"bench_min_buckets"`
	MinServers *ebpf.Variable `ebpf:"bench_min_server_base"`
	MinGen     *ebpf.Variable `ebpf:"bench_min_generation"`
	MinInc     *ebpf.Variable `ebpf:"bench_min_incarnation"`
	NRand      *ebpf.Variable `ebpf:"bench_random_entries"`
	Live       *ebpf.Program  `ebpf:"encap_floor_live_bench"`
	Rot        *ebpf.Program  `ebpf:"rotation_bench"`
	Gen        *ebpf.Program  `ebpf:"traffic_gen_bench"`
	Bench6     *ebpf.Program  `ebpf:"beamer_mux6_bench"` // the IPv6 path's
	Flows      *ebpf.Variable `ebpf:"bench_flows"`
	Key        *ebpf.Variable `ebpf:"bench_key"` // baseline_mux.go
	Frame      *ebpf.Variable `ebpf:"gen_frame"`
	LiveIf     *ebpf.Variable `ebpf:"live_ifindex"`
	LiveD      *ebpf.Variable `ebpf:"live_dmac"`
	LiveS      *ebpf.Variable `ebpf:"live_smac"`
	Lines      *ebpf.Program  `ebpf:"lines_bench"`
	NLines     *ebpf.Variable `ebpf:"bench_lines"`
	Stride     *ebpf.Variable `ebpf:"bench_line_stride"`
	// Scratch is bpf/bench/scratch.h's array (copyBucketsToScratch).
	Scratch *ebpf.Map `ebpf:"bench_scratch"`
	// The Maglev rows' reference connection table (bench_lru.go).
	CtLRU        *ebpf.Map     `ebpf:"conntrack_lru_bench"`
	MaglevLRU    *ebpf.Program `ebpf:"maglev_lru_bench"`
	MaglevLRUOne *ebpf.Program `ebpf:"maglev_lru_single"`
}

// benchMux is the benchmark build of the mux, and in the compare mode the
// baseline build loaded on its maps.
type benchMux struct {
	*dataplane.Mux
	x   muxExtras
	lru *ebpf.Map // the reference connection table installed (nil: none)
	// serverBase is the scratch array's word of server id 0 once
	// copyBucketsToScratch put the server table at its end.
	serverBase uint32
	// bucketWords is the size of the bucket table's copy at the scratch
	// array's start (copyBucketsToScratch).
	bucketWords uint32
	base        *muxBaseline
}

// loadBenchMux loads the benchmark build with opts; lruEntries sizes the
// Maglev rows' reference table (0: ConnTrackEntries, at least 16 a CPU),
// which is installed only when lruEntries is set.
func loadBenchMux(opts dataplane.MuxOptions, lruEntries int) (*benchMux, error) {
	spec, err := loadMuxBench()
	if err != nil {
		return nil, err
	}
	size, err := sizeConnTrackLRU(spec, opts.ConnTrackEntries, lruEntries)
	if err != nil {
		return nil, err
	}
	opts.Spec = spec
	m, err := dataplane.LoadMux(opts)
	if err != nil {
		return nil, err
	}
	b := &benchMux{Mux: m}
	if err := assignFrom(m.Collection(), &b.x); err != nil {
		m.Close()
		return nil, fmt.Errorf("the mux's benchmark build: %w", err)
	}
	if lruEntries > 0 {
		if err := b.installConnTrackLRU(size); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// assignFrom fills to's `ebpf:"name"` fields from c, leaving c as it was
// (Collection.Assign takes what it assigns out of the collection; c is the
// loader's view, which the loader's owner closes).
func assignFrom(c *ebpf.Collection, to any) error {
	if c == nil {
		return fmt.Errorf("not loaded from a spec")
	}
	view := &ebpf.Collection{Programs: maps.Clone(c.Programs), Maps: maps.Clone(c.Maps), Variables: maps.Clone(c.Variables)}
	return view.Assign(to)
}

// BenchProgram is the mux wrapped to undo its encapsulation.
func (b *benchMux) BenchProgram() *ebpf.Program { return b.x.Bench }

// Bench6Program is the mux's IPv6 path wrapped to undo its GUE-over-IPv6
// encapsulation.
func (b *benchMux) Bench6Program() *ebpf.Program { return b.x.Bench6 }

// EmptyProgram returns XDP_TX and nothing else.
func (b *benchMux) EmptyProgram() *ebpf.Program { return b.x.Empty }

// FloorProgram swaps the MACs and returns XDP_TX: the floor of XDP
// forwarding.
func (b *benchMux) FloorProgram() *ebpf.Program { return b.x.Floor }

// EncapFloorProgram encapsulates with fixed headers and undoes it: the
// cost of encapsulation alone.
func (b *benchMux) EncapFloorProgram() *ebpf.Program { return b.x.Encap }

// EncapPlainFloorProgram encapsulates with fixed headers and does nothing
// else, no undo: the honest floor of an IP-in-IP mux (issue 27), run by
// the per-packet method only.
func (b *benchMux) EncapPlainFloorProgram() *ebpf.Program { return b.x.Plain }

// RandomFloorProgram is EncapPlainFloorProgram after one read of a
// 16-bit entry at a random place (by the packet's flow) among the first
// SetRandomEntries entries of the scratch array: the bound of a mux that
// reads one entry of a table that size in the flows' random order.
func (b *benchMux) RandomFloorProgram() *ebpf.Program { return b.x.Random }

// SetRandomEntries sets how many 16-bit entries of the scratch array
// RandomFloorProgram picks from.
func (b *benchMux) SetRandomEntries(n uint32) error {
	if n == 0 || uint64(n) > 4*uint64(b.x.Scratch.MaxEntries()) {
		return fmt.Errorf("encap_floor_random_bench picks from 1 to %d entries, not %d", 4*b.x.Scratch.MaxEntries(), n)
	}
	return b.x.NRand.Set(n)
}

// LiveFloorProgram is the encapsulation floor for live traffic: fixed
// outer header and option, redirected to the device SetLiveFloor names.
func (b *benchMux) LiveFloorProgram() *ebpf.Program { return b.x.Live }

// SetLiveFloor sets where LiveFloorProgram sends: the egress device and
// the Ethernet addresses it writes.
func (b *benchMux) SetLiveFloor(ifindex int, dst, src net.HardwareAddr) error {
	if len(dst) != 6 || len(src) != 6 {
		return fmt.Errorf("live floor: MACs of 6 bytes, got %d and %d", len(dst), len(src))
	}
	if err := b.x.LiveD.Set([6]byte(dst)); err != nil {
		return err
	}
	if err := b.x.LiveS.Set([6]byte(src)); err != nil {
		return err
	}
	return b.x.LiveIf.Set(uint32(ifindex))
}

// RotationProgram moves the packet to the next bench flow, as
// BenchProgram does before the mux runs, and does nothing else: the share
// of a batched mux figure that EncapFloorProgram and the per-packet method
// do not pay.
func (b *benchMux) RotationProgram() *ebpf.Program { return b.x.Rot }

// TrafficGenProgram sends its packet out again as another of the bench
// flows each time; run in live-frames mode it is a packet generator.
func (b *benchMux) TrafficGenProgram() *ebpf.Program { return b.x.Gen }

// SetGenFrame sets the 60-byte frame TrafficGenProgram sends.
func (b *benchMux) SetGenFrame(f [60]byte) error { return b.x.Frame.Set(f) }

// SetBenchFlows makes BenchProgram, and the baseline's, give each
// repetition another of n connections (0: leave the packet's own).
func (b *benchMux) SetBenchFlows(n uint32) error {
	if b.base != nil {
		if err := b.base.SetBenchFlows(n); err != nil {
			return err
		}
	}
	return b.x.Flows.Set(n)
}

// SetBenchOrder selects the visiting order of both builds (bench_key in
// bpf/bench/mux_bench.c): connection tables are filled in one order and
// measured in another.
func (b *benchMux) SetBenchOrder(key uint32) error {
	if b.base != nil {
		if err := b.base.SetBenchOrder(key); err != nil {
			return err
		}
	}
	return b.x.Key.Set(key)
}

// LinesProgram reads SetBenchLines distinct cache lines of the scratch
// array (bpf/bench/scratch.h) and changes nothing: what a touched cache
// line costs.
func (b *benchMux) LinesProgram() *ebpf.Program { return b.x.Lines }

// SetBenchLines sets how many lines LinesProgram reads (at most 16) and
// how many lines apart (131: a page each; 2: all in one page).
func (b *benchMux) SetBenchLines(n, stride uint32) error {
	if n > 16 || stride == 0 || uint64(16*8)*uint64(stride) > uint64(b.x.Scratch.MaxEntries()) {
		return fmt.Errorf("lines_bench reads at most 16 lines within its array, not %d lines %d apart", n, stride)
	}
	if err := b.x.Stride.Set(stride); err != nil {
		return err
	}
	return b.x.NLines.Set(n)
}

// copyBucketsToScratch copies the bucket table of the mux's one instance,
// word for word, to the start of the scratch array, and its server table to
// the scratch array's last SERVER_TABLE_SIZE words, where a measuring build
// (scripts/mux-stages.sh, "helpers") reads them without a helper
// call. The tables are found where the program finds them: the one slot of
// bucket_tables (server_tables) in use.
func (b *benchMux) copyBucketsToScratch() error {
	room := words(b.x.Scratch)
	return b.writeScratch(func(dst []byte) error {
		buckets, err := b.copyInner("bucket_tables", dst, false)
		if err != nil {
			return err
		}
		servers, err := b.copyInner("server_tables", dst, true)
		if err == nil && buckets+servers > room {
			err = fmt.Errorf("bucket table of %d words and server table of %d, scratch array of %d", buckets, servers, room)
		}
		b.serverBase, b.bucketWords = room-servers, buckets
		return err
	})
}

// writeScratch hands the scratch array, mapped writable, to write.
func (b *benchMux) writeScratch(write func(dst []byte) error) error {
	dst, err := unix.Mmap(b.x.Scratch.FD(), 0, int(words(b.x.Scratch))*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mapping the scratch array: %w", err)
	}
	err = write(dst)
	if uerr := unix.Munmap(dst); err == nil {
		err = uerr
	}
	return err
}

// MinimalProgram is the least a Beamer mux does (bpf/bench/mux_bench.c,
// beamer_minimal_bench): the shape, one VIP, the flow hash, the bucket
// and the server read from the scratch copies, the encapsulation.
func (b *benchMux) MinimalProgram() *ebpf.Program { return b.x.Minimal }

// MinimalCountedProgram is MinimalProgram with the least an operated mux
// adds: one per-CPU packet counter and the server's MAC read by id.
func (b *benchMux) MinimalCountedProgram() *ebpf.Program { return b.x.Counted }

// MinimalMoved4Program is MinimalProgram for a bucket that moved with 4
// previous owners (beamer_minimal_moved4_bench): also the bucket's side
// word, its chain entry and the previous owners' server words read from
// the scratch copies, and the 32-byte option. SetMinimal and
// SetMinimalHistory set it up.
func (b *benchMux) MinimalMoved4Program() *ebpf.Program { return b.x.MinMoved4 }

// SetMinimalHistory copies the instance's chain table (its bucket
// histories) to the scratch array, between the bucket table's copy and
// the MAC words SetMinimal put below the server table's, an entry in two
// aligned words, and points MinimalMoved4Program at it. After SetMinimal.
func (b *benchMux) SetMinimalHistory() error {
	room := words(b.x.Scratch)
	servers := room - b.serverBase
	if b.serverBase == 0 || b.bucketWords == 0 || b.serverBase < 2*servers {
		return fmt.Errorf("beamer_minimal_moved4_bench needs the tables copied and SetMinimal first")
	}
	macBase := b.serverBase - servers
	at := (b.bucketWords + 1) &^ 1 // 16-byte entries, each within one cache line
	if at > macBase {
		return fmt.Errorf("no room for the chain table after the bucket table's %d words", b.bucketWords)
	}
	if err := b.writeScratch(func(dst []byte) error { return b.copyChains(dst[8*at : 8*macBase]) }); err != nil {
		return err
	}
	return b.x.MinChains.Set(at)
}

// copyChains copies the instance's chain table, entry by entry (it is
// not mmapable), to the start of dst.
func (b *benchMux) copyChains(dst []byte) error {
	table, err := b.inner("chain_tables")
	if err != nil {
		return err
	}
	defer table.Close()
	if table.ValueSize() != 16 || uint64(table.MaxEntries())*16 > uint64(len(dst)) {
		return fmt.Errorf("chain table of %d entries of %d bytes, room for %d bytes", table.MaxEntries(), table.ValueSize(), len(dst))
	}
	var e [16]byte
	for k := range table.MaxEntries() {
		if err := table.Lookup(k, &e); err != nil {
			return fmt.Errorf("chain entry %d: %w", k, err)
		}
		copy(dst[16*k:], e[:])
	}
	return nil
}

// SetMinimal points MinimalProgram at the instance copyBucketsToScratch
// copied: its VIP, its bucket count, and the option's generation and
// incarnation.
func (b *benchMux) SetMinimal(vip netip.Addr, buckets, generation, incarnation uint32) error {
	if !vip.Is4() || buckets == 0 || b.serverBase == 0 {
		return fmt.Errorf("beamer_minimal_bench needs an IPv4 VIP, buckets and the tables copied (VIP %s, %d buckets)", vip, buckets)
	}
	// The counted program's MACs: a word a server id, just below the
	// server table's copy.
	room := words(b.x.Scratch)
	servers := room - b.serverBase
	if b.serverBase < 2*servers {
		return fmt.Errorf("no room for %d MAC words below the server table at word %d", servers, b.serverBase)
	}
	macBase := b.serverBase - servers
	if err := b.writeScratch(func(dst []byte) error {
		for id := range servers {
			binary.LittleEndian.PutUint64(dst[8*(macBase+id):], 0x020000000000|uint64(id))
		}
		return nil
	}); err != nil {
		return err
	}
	a := vip.As4()
	for _, set := range []struct {
		v   *ebpf.Variable
		val any
	}{{b.x.MinVIP, a}, {b.x.MinBuckets, buckets}, {b.x.MinServers, b.serverBase}, {b.x.MinMACs, macBase}, {b.x.MinGen, bigEndian(generation)}, {b.x.MinInc, bigEndian(incarnation)}} {
		if err := set.v.Set(set.val); err != nil {
			return err
		}
	}
	return nil
}

// bigEndian is v's bytes in network order, for a __be32 variable.
func bigEndian(v uint32) [4]byte {
	var out [4]byte
	binary.BigEndian.PutUint32(out[:], v)
	return out
}

// copyInner copies the one inner map installed in the named outer map to
// the start of dst, or its end (atEnd), and returns its size in words.
func (b *benchMux) copyInner(name string, dst []byte, atEnd bool) (uint32, error) {
	table, err := b.inner(name)
	if err != nil {
		return 0, err
	}
	defer table.Close()
	n, room := words(table), uint32(len(dst)/8)
	if n > room {
		return 0, fmt.Errorf("%s table of %d words, scratch array of %d", name, n, room)
	}
	at := uint32(0)
	if atEnd {
		at = room - n
	}
	src, err := unix.Mmap(table.FD(), 0, int(n)*8, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, fmt.Errorf("mapping the %s table: %w", name, err)
	}
	defer unix.Munmap(src)
	copy(dst[int(at)*8:], src)
	return n, nil
}

// inner opens the one inner map installed in the named outer map.
func (b *benchMux) inner(name string) (*ebpf.Map, error) {
	outer := b.Collection().Maps[name]
	if outer == nil {
		return nil, fmt.Errorf("the mux has no %s", name)
	}
	var table *ebpf.Map
	for slot := range outer.MaxEntries() {
		var id ebpf.MapID
		if err := outer.Lookup(slot, &id); err != nil {
			continue // an empty slot
		}
		if table != nil {
			table.Close()
			return nil, fmt.Errorf("more than one table installed in %s: the bench mux has one instance", name)
		}
		t, err := ebpf.NewMapFromID(id)
		if err != nil {
			return nil, fmt.Errorf("%s slot %d: %w", name, slot, err)
		}
		table = t
	}
	if table == nil {
		return nil, fmt.Errorf("no table installed in %s", name)
	}
	return table, nil
}

// words is how many 64-bit words an array of such values holds.
func words(m *ebpf.Map) uint32 { return m.MaxEntries() * (m.ValueSize() / 8) }

// baseBench is the baseline's benchmark program (nil without one).
func (b *benchMux) baseBench() *ebpf.Program {
	if b.base == nil {
		return nil
	}
	return b.base.BenchProgram()
}

// baseProgram is the baseline's production program (nil without one).
func (b *benchMux) baseProgram() *ebpf.Program {
	if b.base == nil {
		return nil
	}
	return b.base.Program()
}

func (b *benchMux) Close() error {
	if b.base != nil {
		b.base.Close()
	}
	if b.lru != nil {
		b.lru.Close()
	}
	return b.Mux.Close()
}
