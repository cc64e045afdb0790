package beamercli

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
)

// FuzzDecodeCapture: `beamer decode` on any bytes, pcap or pcapng (the
// files `beamer mux|agent capture` writes), answers or errs, never panics.
func FuzzDecodeCapture(f *testing.F) {
	if b, err := os.ReadFile("../../../testdata/pcap/beamer-sample.pcap"); err == nil {
		f.Add(b)
	}
	var ng bytes.Buffer
	cw, err := newCaptureWriter(&ng, "pcapng", 64, dataplane.MuxCapturePoints)
	if err != nil {
		f.Fatal(err)
	}
	frame := []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 20, 0, 0, 0, 0, 64, 4, 0, 0, 198, 18, 0, 1, 198, 18, 0, 10}
	for _, p := range dataplane.MuxCapturePoints {
		if err := cw.write(dataplane.CaptureRecord{Time: time.Unix(1700000000, 0), Point: p, Length: len(frame), Data: frame}); err != nil {
			f.Fatal(err)
		}
	}
	if err := cw.flush(); err != nil {
		f.Fatal(err)
	}
	f.Add(ng.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		decodePcap(bytes.NewReader(b), []uint16{6080})
	})
}
