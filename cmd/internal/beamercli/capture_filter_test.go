package beamercli

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
)

// TestCaptureFilterFlag: --filter PROTO/SRC/SPORT/DST/DPORT as
// docs/operations.md writes it, any field empty or *, and what is refused.
func TestCaptureFilterFlag(t *testing.T) {
	var f dataplane.CaptureFilter
	if err := parseCaptureFilter("tcp/198.18.1.10/*/198.18.100.1/80", &f); err != nil {
		t.Fatal(err)
	}
	if f.Proto != 6 || f.Src != netip.MustParseAddr("198.18.1.10") || f.SrcPort != 0 || f.Dst != netip.MustParseAddr("198.18.100.1") || f.DstPort != 80 {
		t.Fatalf("parsed %+v", f)
	}
	f = dataplane.CaptureFilter{}
	if err := parseCaptureFilter("udp//5353/2001:db8::7/", &f); err != nil || f.Proto != 17 || f.SrcPort != 5353 || f.Dst != netip.MustParseAddr("2001:db8::7") {
		t.Fatalf("parsed %+v, %v", f, err)
	}
	for _, bad := range []string{"tcp/1.2.3.4", "tcp/x/*/*/*", "tcp/*/0/*/*", "tcp/*/*/*/65536", "sctpx/*/*/*/*", "0/*/*/*/*",
		"tcp/198.18.1.10/*/2001:db8::1/*", "tcp/*/*/*/*/*"} {
		if err := parseCaptureFilter(bad, &dataplane.CaptureFilter{}); err == nil {
			t.Errorf("--filter %q accepted", bad)
		}
	}
	o := captureFlags{count: 0, snaplen: 100, guePort: 6080}
	if _, err := o.options(dataplane.MuxCapturePoints); err == nil {
		t.Error("-c 0 accepted")
	}
	o = captureFlags{count: 10, snaplen: 100, guePort: 6080, points: []string{"agent-up"}}
	if _, err := o.options(dataplane.MuxCapturePoints); err == nil {
		t.Error("a mux capture at agent-up accepted")
	}
	o = captureFlags{count: 10, snaplen: 100, guePort: 6080, vip: "198.18.100.1", filter: "tcp/*/*/*/80"}
	if _, err := o.options(dataplane.MuxCapturePoints); err == nil {
		t.Error("--vip and --filter together accepted")
	}
}
