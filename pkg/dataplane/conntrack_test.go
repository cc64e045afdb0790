package dataplane

import (
	"encoding/binary"
	"math/bits"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// ctHash is bpf/include/conntrack.h ct_key_of's hash: lookup3's final mix
// over the tuple's words as the program loads them (network-order bytes
// read as little-endian numbers), seeded with the table's seed ^ protocol.
func ctHash(f wire.Flow, seed uint32) uint32 {
	s, d := f.Src.As4(), f.Dst.As4()
	var sp, dp [2]byte
	binary.BigEndian.PutUint16(sp[:], f.SrcPort)
	binary.BigEndian.PutUint16(dp[:], f.DstPort)
	a, b := binary.LittleEndian.Uint32(s[:]), binary.LittleEndian.Uint32(d[:])
	c := uint32(binary.LittleEndian.Uint16(sp[:])) | uint32(binary.LittleEndian.Uint16(dp[:]))<<16
	iv := (seed ^ uint32(f.Proto)) + 0xdeadbeef + 12
	a, b, c = a+iv, b+iv, c+iv
	c ^= b
	c -= bits.RotateLeft32(b, 14)
	a ^= c
	a -= bits.RotateLeft32(c, 11)
	b ^= a
	b -= bits.RotateLeft32(a, 25)
	c ^= b
	c -= bits.RotateLeft32(b, 16)
	a ^= c
	a -= bits.RotateLeft32(c, 4)
	b ^= a
	b -= bits.RotateLeft32(a, 14)
	c ^= b
	c -= bits.RotateLeft32(b, 24)
	return c
}

// ctBucketOf is the flow's (chunk, bucket) in m's table.
func ctBucketOf(m *Mux, f wire.Flow) (uint32, uint32) {
	p := uint64(ctHash(f, m.ctSeed)) * uint64(m.ct.chunks)
	return uint32(p >> 32), uint32((uint64(uint32(p)) * uint64(m.ct.buckets)) >> 32)
}

// ctSlots are the source ports and touched bits of the entries in a
// bucket, read from the kernel.
func ctSlots(t *testing.T, m *Mux, chunk, bucket uint32) (ports []uint16, touched []bool) {
	t.Helper()
	v, err := chunkOf(m.objs.Conntrack, chunk, ctSpec())
	must(t, err)
	b := v[m.ct.pad+bucket*ctBucketBytes:]
	for s := 0; s < ctWays; s++ {
		slot := b[s*ctSlotBytes:]
		if binary.LittleEndian.Uint16(slot[14:]) == 0 {
			continue
		}
		ports = append(ports, binary.BigEndian.Uint16(slot[8:]))
		touched = append(touched, slot[13]&1 != 0)
	}
	return ports, touched
}

// sameBucket finds n flows of the rig (by source port) that share one
// bucket of its table.
func (r *maglevRig) sameBucket(n int) ([]wire.Flow, uint32, uint32) {
	r.t.Helper()
	byBucket := map[[2]uint32][]wire.Flow{}
	for p := uint16(45000); p < 50000; p++ {
		f := r.flow(p)
		c, b := ctBucketOf(r.m, f)
		k := [2]uint32{c, b}
		byBucket[k] = append(byBucket[k], f)
		if len(byBucket[k]) == n {
			return byBucket[k], c, b
		}
	}
	r.t.Fatalf("no %d flows in one bucket", n)
	return nil, 0, 0
}

// TestConnTrackHashMatchesProgram: the Go mirror of the hash finds the
// bucket the program filled (else the tests below test nothing).
func TestConnTrackHashMatchesProgram(t *testing.T) {
	r := newMaglevRig(t, MuxOptions{ConnTrackEntries: 64})
	f := r.flow(44000)
	r.send(f, wiretest.SYN)
	c, b := ctBucketOf(r.m, f)
	ports, touched := ctSlots(t, r.m, c, b)
	if len(ports) != 1 || ports[0] != 44000 || touched[0] {
		t.Fatalf("bucket %d/%d after one SYN: ports %v touched %v, want [44000] untouched", c, b, ports, touched)
	}
	r.send(f, wiretest.ACK)
	if _, touched := ctSlots(t, r.m, c, b); !touched[0] {
		t.Fatal("entry not touched by a hit")
	}
}

// TestConnTrackFullBucketKeepsActive: in a full bucket a new connection
// replaces an entry no packet has found since it was made (a one-packet
// flow), not the connections that are sending; when every entry was used,
// all start a new round and one goes.
func TestConnTrackFullBucketKeepsActive(t *testing.T) {
	r := newMaglevRig(t, MuxOptions{ConnTrackEntries: 64})
	fs, c, b := r.sameBucket(6)
	for _, f := range fs[:4] {
		r.send(f, wiretest.SYN)
	}
	for _, f := range fs[:3] { // three connections send on; the fourth was one SYN
		if _, got := r.send(f, wiretest.ACK); got != "ct_hit" {
			t.Fatalf("flow %v: %s, want ct_hit", f, got)
		}
	}
	r.send(fs[4], wiretest.SYN) // the bucket is full: the untouched entry goes
	ports, _ := ctSlots(t, r.m, c, b)
	want := map[uint16]bool{fs[0].SrcPort: true, fs[1].SrcPort: true, fs[2].SrcPort: true, fs[4].SrcPort: true}
	for _, p := range ports {
		delete(want, p)
	}
	if len(ports) != 4 || len(want) != 0 {
		t.Fatalf("bucket after a fifth connection: ports %v, want the three active ones and the new one", ports)
	}
	if _, got := r.send(fs[3], wiretest.ACK); got != "ct_miss" {
		t.Fatalf("evicted one-packet flow: %s, want ct_miss (the Maglev table, as without a connection table)", got)
	}
	// fs[3] is back in fs[4]'s place (the one untouched entry). Touch it:
	// all four are touched; the next new connection starts a new round.
	r.send(fs[3], wiretest.ACK)
	r.send(fs[5], wiretest.SYN)
	ports, touched := ctSlots(t, r.m, c, b)
	if len(ports) != 4 {
		t.Fatalf("bucket holds %d entries, want 4", len(ports))
	}
	kept := 0
	for i, p := range ports {
		if touched[i] {
			t.Fatalf("entry %d still touched after a new round", p)
		}
		for _, f := range fs[:4] {
			if f.SrcPort == p {
				kept++
			}
		}
	}
	if kept != 3 || !contains(ports, fs[5].SrcPort) {
		t.Fatalf("new round: ports %v, want three of %v and %d", ports, fs[:4], fs[5].SrcPort)
	}
}

func contains(ps []uint16, p uint16) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// TestConnTrackSYNReplacesInPlace: a SYN reusing a known tuple replaces
// its entry (no second entry for one tuple), untouched.
func TestConnTrackSYNReplacesInPlace(t *testing.T) {
	r := newMaglevRig(t, MuxOptions{ConnTrackEntries: 64})
	f := r.flow(44100)
	r.send(f, wiretest.SYN)
	r.send(f, wiretest.ACK)
	r.send(f, wiretest.SYN)
	c, b := ctBucketOf(r.m, f)
	if ports, touched := ctSlots(t, r.m, c, b); len(ports) != 1 || touched[0] {
		t.Fatalf("after SYN, ACK, SYN of one tuple: ports %v touched %v, want one untouched entry", ports, touched)
	}
}

// TestConnTrackSurvivesRestart: a mux that adopts its predecessor's pinned
// table (same size) keeps its connections on their servers though the
// Maglev table moved them; one configured with another size starts a new
// table (the old one hashes elsewhere), and its connections are misses.
func TestConnTrackSurvivesRestart(t *testing.T) {
	pins := netlabtest.PinDir(t, "ctrs")
	var (
		f      wire.Flow
		was    netip.Addr
		bucket uint32
		other  forwarding.ServerID
		seed   uint32
	)
	// Each mux in a subtest: its rig (and the mux) are closed at the end
	// of it, the pins stay.
	t.Run("first", func(t *testing.T) {
		r := newMaglevRig(t, MuxOptions{ConnTrackEntries: 4096, PinDir: pins})
		f = r.flow(44200)
		was, _ = r.send(f, wiretest.SYN)
		bucket = f.Bucket(uint32(len(r.table.Buckets)))
		other = r.table.Buckets[bucket].Current + 1
		if _, ok := r.table.Servers[other]; !ok {
			other -= 2
		}
		seed = r.m.ctSeed
	})
	t.Run("same size", func(t *testing.T) {
		r := newMaglevRig(t, MuxOptions{ConnTrackEntries: 4096, PinDir: pins})
		if r.m.ctSeed != seed {
			t.Fatalf("adopted table's seed %d, want the predecessor's %d", r.m.ctSeed, seed)
		}
		r.apply(&forwarding.Delta{Buckets: []forwarding.BucketChange{{Index: bucket, Bucket: forwarding.Bucket{Current: other}}}})
		if got, c := r.send(f, wiretest.ACK); got != was || c != "ct_hit" {
			t.Fatalf("connection after the restart: to %v (%s), want %v by ct_hit", got, c, was)
		}
	})
	t.Run("another size", func(t *testing.T) {
		r := newMaglevRig(t, MuxOptions{ConnTrackEntries: 8192, PinDir: pins})
		if n, err := r.m.ConnTrackEntries(); err != nil || n != 0 {
			t.Fatalf("a mux of another table size: %d entries (%v), want a new empty table", n, err)
		}
	})
}
