package dataplane

import (
	"encoding/binary"
	"testing"

	"github.com/beamer-lb/beamer/pkg/strategy/awfd"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestAWFDVectors runs every case of testdata/awfd-vectors.json through
// the C selection (strategy/awfd_select.h, the mux's code) with the record
// packed as the mux loader packs it; pkg/strategy/awfd/classes checks the Go side against
// the same file.
func TestAWFDVectors(t *testing.T) {
	v, err := classes.LoadVectors("../../testdata/awfd-vectors.json")
	must(t, err)
	netlabtest.RequireRoot(t)
	var objs awfdProbeObjects
	must(t, loadAwfdProbeObjects(&objs, nil))
	defer objs.Close()
	spec, err := loadMux()
	must(t, err)
	checked := 0
	for _, c := range v.Cases {
		rec, err := awfd.PackRecord(spec, c.Record)
		must(t, err)
		must(t, objs.Record.Put(uint32(0), rec))
		for _, p := range c.Picks {
			in := make([]byte, 16)
			binary.LittleEndian.PutUint32(in, p.Hash)
			ret, out, err := objs.AwfdProbe.Test(in)
			must(t, err)
			if ret != 2 {
				t.Fatalf("probe returned %d", ret)
			}
			class := int32(binary.LittleEndian.Uint32(out[4:]))
			server := binary.LittleEndian.Uint32(out[8:])
			if int(class) != p.Class || server != uint32(p.Server) {
				t.Errorf("%s: hash %#x: C picks class %d server %d, vector %d %d", c.Name, p.Hash, class, server, p.Class, p.Server)
			}
			checked++
		}
	}
	if checked < 400 {
		t.Fatalf("only %d picks checked", checked)
	}
}
