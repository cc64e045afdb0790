package dataplane

import (
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestFlowHashVectors checks the C flow hash and bucket choice against every
// hash vector of testdata/vectors.json (the Go side is checked by pkg/model).
func TestFlowHashVectors(t *testing.T) {
	v, err := wiretest.LoadVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	var objs hashProbeObjects
	must(t, loadHashProbeObjects(&objs, nil))
	defer objs.Close()
	for _, h := range v.FlowHash {
		in := make([]byte, 32)
		s, d := h.Src.As4(), h.Dst.As4()
		copy(in[0:4], s[:])
		copy(in[4:8], d[:])
		binary.BigEndian.PutUint16(in[8:], h.SrcPort)
		binary.BigEndian.PutUint16(in[10:], h.DstPort)
		binary.LittleEndian.PutUint32(in[12:], uint32(h.Proto))
		binary.LittleEndian.PutUint32(in[16:], h.Buckets)
		ret, out, err := objs.FlowHashProbe.Test(in)
		must(t, err)
		if ret != 2 {
			t.Fatalf("probe returned %d", ret)
		}
		if got := binary.LittleEndian.Uint32(out[20:]); got != h.Hash {
			t.Errorf("C hash of %+v = %#x, vector %#x", h, got, h.Hash)
		}
		if got := binary.LittleEndian.Uint32(out[24:]); got != h.Bucket {
			t.Errorf("C bucket of %+v = %d, vector %d", h, got, h.Bucket)
		}
	}
}

// TestFlowHash6Probe checks the C IPv6 flow hash (addresses folded, then
// the IPv4 hash: bpf/include/flow.h) and bucket against the Go model
// (pkg/wire) on pseudo-random IPv6 tuples under 2001:db8::/32.
func TestFlowHash6Probe(t *testing.T) {
	netlabtest.RequireRoot(t)
	var objs hashProbeObjects
	must(t, loadHashProbeObjects(&objs, nil))
	defer objs.Close()
	rng := rand.New(rand.NewPCG(16, 6))
	addr := func() netip.Addr {
		var a [16]byte
		binary.BigEndian.PutUint32(a[0:], 0x20010db8)
		binary.BigEndian.PutUint32(a[4:], rng.Uint32())
		binary.BigEndian.PutUint64(a[8:], rng.Uint64())
		return netip.AddrFrom16(a)
	}
	for i := 0; i < 500; i++ {
		f := wire.Flow{Src: addr(), Dst: addr(), SrcPort: uint16(rng.Uint32()), DstPort: uint16(rng.Uint32()), Proto: []uint8{6, 17}[i%2]}
		buckets := 1 + rng.Uint32N(1<<20)
		in := make([]byte, 56)
		s, d := f.Src.As16(), f.Dst.As16()
		copy(in[0:], s[:])
		copy(in[16:], d[:])
		binary.BigEndian.PutUint16(in[32:], f.SrcPort)
		binary.BigEndian.PutUint16(in[34:], f.DstPort)
		binary.LittleEndian.PutUint32(in[36:], uint32(f.Proto))
		binary.LittleEndian.PutUint32(in[40:], buckets)
		ret, out, err := objs.Flow6HashProbe.Test(in)
		must(t, err)
		if ret != 2 {
			t.Fatalf("probe returned %d", ret)
		}
		if got := binary.LittleEndian.Uint32(out[44:]); got != f.Hash() {
			t.Fatalf("C hash of %+v = %#x, Go %#x", f, got, f.Hash())
		}
		if got := binary.LittleEndian.Uint32(out[48:]); got != f.Bucket(buckets) {
			t.Fatalf("C bucket of %+v in %d = %d, Go %d", f, buckets, got, f.Bucket(buckets))
		}
	}
}
