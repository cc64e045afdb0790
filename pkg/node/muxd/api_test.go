package muxd

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// A plaintext mux node API off loopback is refused unless --insecure,
// before the mux changes anything; on loopback it serves.
func TestMuxPlaintextAPIRefused(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "muxapi").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 0)
	start := func(api string) (*Daemon, error) {
		var d *Daemon
		err := ns.Do(func() (err error) {
			d, err = Start(Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, PinDir: "-", API: api})
			return err
		})
		return d, err
	}
	if d, err := start("198.18.0.1:9101"); err == nil {
		d.Close()
		t.Fatal("a plaintext mux API on 198.18.0.1 started without --insecure")
	} else if !strings.Contains(err.Error(), "mux API on 198.18.0.1:9101 without TLS") {
		t.Errorf("error %q", err)
	}
	d, err := start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("a plaintext mux API on loopback: %v", err)
	}
	if d.APIServer() == nil || d.APIServer().TLS() {
		t.Error("no plaintext API server on loopback")
	}
	if err := ns.Do(d.Close); err != nil {
		t.Fatal(err)
	}
}
