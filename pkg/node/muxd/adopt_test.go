package muxd

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// xdpProgID is the id of the XDP program on eth0 in ns ("" when none).
func xdpProgID(t *testing.T, ns *netlab.Namespace) string {
	out, err := ns.Run("ip", "-d", "link", "show", "eth0")
	must(t, err)
	i := strings.Index(out, "prog/xdp id ")
	if i < 0 {
		return ""
	}
	return strings.Fields(out[i+len("prog/xdp id "):])[0]
}

// TestTakeOverWaitsForInstances: a mux started after one that died (its
// program pinned and forwarding) keeps that program until every instance
// it was told to expect is loaded — a store-mode mux may load late — and
// only then swaps its own in; on a clean exit it restores the forwarding
// value from before the dead mux, read from the record it left.
func TestTakeOverWaitsForInstances(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "muxadopt").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	must(t, ns.Sysctl("net.ipv4.conf.eth0.forwarding", "0"))
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "mux.yaml"), []byte(`
interface: eth0
instances:
  - name: web
    strategy: beamer
    vips: [198.18.100.1]
    port_low: 80
    port_high: 80
    buckets: 67
    servers:
      - {id: 1025, address: 198.18.0.10}
`), 0o644))
	cfg, err := config.LoadMux(filepath.Join(dir, "mux.yaml"))
	must(t, err)
	in := cfg.Instances[0]
	opts := Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, StateFile: filepath.Join(dir, "state.json"),
		PinDir: netlabtest.PinDir(t, "adopt")}

	var first *Daemon
	must(t, ns.Do(func() (err error) {
		if first, err = Start(opts); err != nil {
			return err
		}
		if err := first.SetInstance(in.Instance, in.Table()); err != nil {
			return err
		}
		return first.Ready()
	}))
	dead := xdpProgID(t, ns)
	if dead == "" {
		t.Fatal("first mux not attached")
	}
	// The first mux dies (or exits for an upgrade, SIGUSR2): its
	// descriptors close, its pins and record stay.
	must(t, first.Abandon())
	if id := xdpProgID(t, ns); id != dead {
		t.Fatalf("program %q after the mux died, want its pinned %s", id, dead)
	}

	var second *Daemon
	must(t, ns.Do(func() (err error) { second, err = Start(opts); return err }))
	second.Expect("web")
	must(t, second.Ready())
	if id := xdpProgID(t, ns); id != dead {
		t.Fatalf("program %q replaced before the instance loaded, want the pinned %s forwarding", id, dead)
	}
	must(t, ns.Do(func() error { return second.SetInstance(in.Instance, in.Table()) }))
	if id := xdpProgID(t, ns); id == dead || id == "" {
		t.Fatalf("program %q once the instance loaded, want the new mux's in place of %s", id, dead)
	}
	must(t, ns.Do(second.Close))
	if id := xdpProgID(t, ns); id != "" {
		t.Errorf("program %s attached after a clean exit", id)
	}
	if out, _ := ns.Run("sysctl", "-n", "net.ipv4.conf.eth0.forwarding"); strings.TrimSpace(out) != "0" {
		t.Errorf("forwarding %q after the clean exit, want 0 (from before the first mux)", strings.TrimSpace(out))
	}
	if _, err := os.Stat(opts.PinDir); !os.IsNotExist(err) {
		t.Errorf("pins left: %v", err)
	}
}

// TestMuxStartFailureUnwinds: a mux whose start fails after it attached
// (here: its metrics address) detaches, unpins and restores forwarding.
func TestMuxStartFailureUnwinds(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "muxfail").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 0)
	must(t, ns.Sysctl("net.ipv4.conf.eth0.forwarding", "0"))
	dir := t.TempDir()
	opts := Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, Metrics: "nonsense", StateFile: filepath.Join(dir, "state.json"),
		PinDir: netlabtest.PinDir(t, "muxfail")}
	err := ns.Do(func() error { _, err := Start(opts); return err })
	const want = "metrics listener: listen tcp: address nonsense: missing port in address"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	if id := xdpProgID(t, ns); id != "" {
		t.Errorf("program %s left attached", id)
	}
	if out, _ := ns.Run("sysctl", "-n", "net.ipv4.conf.eth0.forwarding"); strings.TrimSpace(out) != "0" {
		t.Errorf("forwarding %q left", strings.TrimSpace(out))
	}
	for _, p := range []string{opts.PinDir, opts.StateFile} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
}
