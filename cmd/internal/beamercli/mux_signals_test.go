package beamercli

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

func writeMuxConfig(t *testing.T, dir string) string {
	cfg := filepath.Join(dir, "mux.yaml")
	err := os.WriteFile(cfg, []byte(`
interface: eth0
xdp_mode: generic
instances:
  - name: web
    strategy: beamer
    vips: [198.18.100.1]
    port_low: 80
    port_high: 80
    buckets: 100
    servers:
      - {id: 1025, address: 198.18.0.10}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// xdpProg is the id of the XDP program on eth0 in ns, "" when none.
func xdpProg(ns *netlab.Namespace) string {
	out, _ := ns.Run("ip", "-d", "link", "show", "eth0")
	i := strings.Index(out, "prog/xdp id ")
	if i < 0 {
		return ""
	}
	return strings.Fields(out[i+len("prog/xdp id "):])[0]
}

func waitAttached(t *testing.T, done chan error, attached func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !attached(); time.Sleep(50 * time.Millisecond) {
		select {
		case err := <-done:
			t.Fatalf("mux exited: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("mux not attached within 10s")
		}
	}
}

func muxNamespace(t *testing.T, tag string) *netlab.Namespace {
	ns, _ := netlabtest.NewRig(t, tag).Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	if err := ns.Sysctl("net.ipv4.conf.eth0.forwarding", "0"); err != nil {
		t.Fatal(err)
	}
	return ns
}

// TestMuxSignals runs `beamer mux --config` in a namespace, sends the
// process SIGHUP (which Go's default handling would exit on) and checks
// the mux is still attached; then SIGTERM stops it gracefully: detached and
// the forwarding sysctl restored (issue 11, row "mux SIGKILLed", the
// lifecycle part).
func TestMuxSignals(t *testing.T) {
	ns := muxNamespace(t, "muxsig")
	dir := t.TempDir()
	cfg := writeMuxConfig(t, dir)
	done := make(chan error, 1)
	go func() {
		done <- ns.Do(func() error {
			return run("mux", "--config", cfg, "--pin-dir", "-", "--state-file", filepath.Join(dir, "state.json"))
		})
	}()
	attached := func() bool { return xdpProg(ns) != "" }
	waitAttached(t, done, attached)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("mux stopped on SIGHUP: %v", err)
	default:
	}
	if !attached() {
		t.Fatal("mux detached on SIGHUP")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("graceful stop: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("mux did not stop on SIGTERM")
	}
	if attached() {
		t.Error("XDP program still attached after SIGTERM")
	}
	if out, _ := ns.Run("sysctl", "-n", "net.ipv4.conf.eth0.forwarding"); strings.TrimSpace(out) != "0" {
		t.Errorf("forwarding %q after SIGTERM, want 0 restored", strings.TrimSpace(out))
	}
}

// TestMuxUpgradeSignal: SIGUSR2 ends `beamer mux` for an upgrade — its
// program stays pinned and attached, forwarding stays on — and the next
// `beamer mux` takes the pinned link over with its own program; SIGTERM
// then detaches, unpins and restores forwarding.
func TestMuxUpgradeSignal(t *testing.T) {
	ns := muxNamespace(t, "muxupg")
	dir := t.TempDir()
	cfg := writeMuxConfig(t, dir)
	pins := netlabtest.PinDir(t, "upgrade")
	start := func() chan error {
		done := make(chan error, 1)
		go func() {
			done <- ns.Do(func() error {
				return run("mux", "--config", cfg, "--pin-dir", pins, "--state-file", filepath.Join(dir, "state.json"))
			})
		}()
		return done
	}
	stop := func(sig syscall.Signal, done chan error) {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("after %v: %v", sig, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("mux did not stop on %v", sig)
		}
	}
	done := start()
	waitAttached(t, done, func() bool { return xdpProg(ns) != "" })
	old := xdpProg(ns)
	stop(syscall.SIGUSR2, done)
	if id := xdpProg(ns); id != old {
		t.Fatalf("program %q after the upgrade exit, want %s still attached", id, old)
	}
	if out, _ := ns.Run("sysctl", "-n", "net.ipv4.conf.eth0.forwarding"); strings.TrimSpace(out) != "1" {
		t.Fatalf("forwarding %q after the upgrade exit, want 1 kept for the pinned program", strings.TrimSpace(out))
	}
	done = start()
	waitAttached(t, done, func() bool { id := xdpProg(ns); return id != "" && id != old })
	stop(syscall.SIGTERM, done)
	if id := xdpProg(ns); id != "" {
		t.Errorf("program %s attached after SIGTERM", id)
	}
	if out, _ := ns.Run("sysctl", "-n", "net.ipv4.conf.eth0.forwarding"); strings.TrimSpace(out) != "0" {
		t.Errorf("forwarding %q after SIGTERM, want 0 from before the first mux", strings.TrimSpace(out))
	}
	if _, err := os.Stat(pins); !os.IsNotExist(err) {
		t.Errorf("pins left: %v", err)
	}
}
