package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
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
