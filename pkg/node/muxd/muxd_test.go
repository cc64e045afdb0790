package muxd

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestStaticMux starts the daemon from a static configuration file inside a
// namespace, and checks the program is attached, the instance loaded, the
// servers' neighbours managed and the metrics and health endpoints served.
func TestStaticMux(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "muxd").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	path := filepath.Join(t.TempDir(), "mux.yaml")
	os.WriteFile(path, []byte(`
interface: eth0
xdp_mode: generic
metrics: 127.0.0.1:0
instances:
  - name: web
    strategy: beamer
    vips: [198.18.100.1]
    port_low: 80
    port_high: 80
    buckets: 100
    servers:
      - {id: 1025, address: 198.18.0.10}
      - {id: 1026, address: 198.18.0.11}
`), 0o644)
	cfg, err := config.LoadMux(path)
	if err != nil {
		t.Fatal(err)
	}
	var d *Daemon
	err = ns.Do(func() (err error) {
		d, err = Start(Options{Interface: cfg.Interface, XDPMode: dataplane.XDPGeneric, Metrics: cfg.Metrics})
		if err != nil {
			return err
		}
		if err := d.Healthy(); err == nil {
			t.Error("healthy before any instance")
		}
		return d.SetInstance(cfg.Instances[0].Instance, cfg.Instances[0].Table())
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Address() != netip.MustParseAddr("198.18.0.1") {
		t.Errorf("address %v, want the interface's", d.Address())
	}
	if out, _ := ns.Run("ip", "link", "show", "eth0"); !strings.Contains(out, "xdpgeneric") {
		t.Errorf("no XDP program on eth0:\n%s", out)
	}
	if out, _ := ns.Run("ip", "neigh", "show"); !strings.Contains(out, "198.18.0.10") || !strings.Contains(out, "managed") {
		t.Errorf("no managed neighbour for the servers:\n%s", out)
	}
	if g, ok := d.Mux().Generation("web"); !ok || g != 1 {
		t.Errorf("generation %d, %v", g, ok)
	}
	get := func(p string) (int, string) {
		// The endpoint listens inside the namespace: connect from there,
		// then let the HTTP client use that connection.
		var conn net.Conn
		if err := ns.Do(func() (err error) { conn, err = net.Dial("tcp", d.metrics.Addr().String()); return err }); err != nil {
			t.Fatal(err)
		}
		c := http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}}
		resp, err := c.Get("http://mux" + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 {
		t.Errorf("healthz %d: %s", code, body)
	}
	if _, body := get("/metrics"); !strings.Contains(body, `beamer_mux_packets_total{decision="fwd_bucket"}`) ||
		!strings.Contains(body, `beamer_mux_generation{lb_instance="web"} 1`) {
		t.Errorf("metrics lack the decision counters or generation:\n%.2000s", body)
	}
}
