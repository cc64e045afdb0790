package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
)

// TestMuxSignals runs `beamer mux --config` in a namespace, sends the
// process SIGHUP (which Go's default handling would exit on) and checks
// the mux is still attached; then SIGTERM stops it gracefully: detached and
// the forwarding sysctl restored (issue 11, row "mux SIGKILLed", the
// lifecycle part).
func TestMuxSignals(t *testing.T) {
	lab := netlabtest.New(t, "muxsig")
	ns, err := lab.Namespace("mux")
	if err != nil {
		t.Fatal(err)
	}
	peer, err := lab.Namespace("net")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth(ns, "eth0", netip.MustParsePrefix("198.18.0.1/24"), peer, "eth0", netip.MustParsePrefix("198.18.0.10/24"), 1600); err != nil {
		t.Fatal(err)
	}
	if err := ns.Sysctl("net.ipv4.conf.eth0.forwarding", "0"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mux.yaml")
	os.WriteFile(cfg, []byte(`
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
	done := make(chan error, 1)
	go func() {
		done <- ns.Do(func() error {
			return run("mux", "--config", cfg, "--pin-dir", "-", "--state-file", filepath.Join(dir, "state.json"))
		})
	}()
	attached := func() bool {
		out, _ := ns.Run("ip", "link", "show", "eth0")
		return strings.Contains(out, "xdpgeneric")
	}
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
