package muxd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/beamer-lb/beamer/pkg/strategy/prism/migration"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestPrismKeepAliveEndpoint: a real SYN through the XDP mux hits an MCT
// entry and sets its keep-alive bit; a Prometheus scrape sweeps the bits
// (its idle gauge) without taking the hit from the controller, whose POST
// /v1/prism/keepalive gets it once, then no more; bad requests get clear
// errors. Only a controller certificate may collect (the node API's
// mutual TLS): a mux's, an agent's or none take nothing.
func TestPrismKeepAliveEndpoint(t *testing.T) {
	ns, peer := netlabtest.NewRig(t, "muxd").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	if _, err := peer.Run("ip", "route", "add", "198.18.100.1/32", "via", "198.18.0.1"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mux.yaml")
	os.WriteFile(path, []byte(`
interface: eth0
xdp_mode: generic
metrics: 127.0.0.1:0
instances:
  - name: web
    strategy: prism
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
	const port = 41001
	flow := wire.Flow{Src: netip.MustParseAddr("198.18.0.10"), Dst: netip.MustParseAddr("198.18.100.1"), SrcPort: port, DstPort: 80, Proto: wire.ProtoTCP}
	idle := wire.Flow{Src: flow.Src, Dst: flow.Dst, SrcPort: port + 1, DstPort: 80, Proto: wire.ProtoTCP}
	tab := cfg.Instances[0].Table()
	tab.MCT = map[uint64]forwarding.ServerID{flow.Signature(): 1025, idle.Signature(): 1025}
	// The node API is mutual TLS: the controller's certificate collects,
	// a mux's or an agent's gets 403, none gets no HTTP at all.
	certs := t.TempDir()
	if err := nodeauth.Issue(certs, "127.0.0.1", "ctl=controller", "mux1=mux@198.18.0.1", "agent1=agent@198.18.0.10"); err != nil {
		t.Fatal(err)
	}
	srvTLS, err := nodeauth.ServerConfig(nodeauth.FilesIn(certs, "mux1"), nodeauth.RoleMux)
	if err != nil {
		t.Fatal(err)
	}
	var d *Daemon
	err = ns.Do(func() (err error) {
		if d, err = Start(Options{Interface: cfg.Interface, XDPMode: dataplane.XDPGeneric, Metrics: cfg.Metrics, API: "198.18.0.1:0", APITLS: srvTLS, PinDir: "-"}); err != nil {
			return err
		}
		return d.SetInstance(cfg.Instances[0].Instance, tab)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	// The keep-alive bits are on the node API (called from the peer, as the
	// controller would), the metrics on --metrics (from the mux's host).
	asWho := func(who, method, p string) (int, string, error) {
		from, scheme, addr := peer, "https", d.api.Addr().String()
		tc := &tls.Config{}
		if p == "/metrics" {
			from, scheme, addr = ns, "http", d.metrics.Addr().String()
		} else {
			pem, _ := os.ReadFile(filepath.Join(certs, "ca.pem"))
			tc.RootCAs = x509.NewCertPool()
			tc.RootCAs.AppendCertsFromPEM(pem)
			if who != "" {
				cert, err := tls.LoadX509KeyPair(filepath.Join(certs, who+".pem"), filepath.Join(certs, who+"-key.pem"))
				if err != nil {
					t.Fatal(err)
				}
				tc.Certificates = []tls.Certificate{cert}
			}
		}
		var conn net.Conn
		if err := from.Do(func() (err error) { conn, err = net.Dial("tcp", addr); return err }); err != nil {
			t.Fatal(err)
		}
		c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc,
			DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}}
		req, _ := http.NewRequest(method, scheme+"://"+strings.Split(addr, ":")[0]+p, nil)
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	do := func(method, p string) (int, string) {
		code, body, err := asWho("ctl", method, p)
		if err != nil {
			t.Fatal(err)
		}
		return code, body
	}
	refused := func() {
		t.Helper()
		for _, who := range []string{"mux1", "agent1"} {
			if code, body, err := asWho(who, http.MethodPost, migration.KeepAlivePath+"?instance=web"); err != nil || code != http.StatusForbidden {
				t.Errorf("keep-alive bits collected as %s: %d %s %v, want 403", who, code, body, err)
			}
		}
		if code, _, err := asWho("", http.MethodPost, migration.KeepAlivePath+"?instance=web"); err == nil {
			t.Errorf("keep-alive bits without a certificate: answered %d, want the handshake refused", code)
		}
	}
	collect := func() migration.KeepAliveReport {
		t.Helper()
		code, body := do(http.MethodPost, migration.KeepAlivePath+"?instance=web")
		var r migration.KeepAliveReport
		if code != 200 || json.Unmarshal([]byte(body), &r) != nil {
			t.Fatalf("keep-alive collection: %d %s", code, body)
		}
		return r
	}
	if r := collect(); len(r.Hit) != 0 || r.Entries != 2 || r.Instance != "web" {
		t.Fatalf("before any packet: %+v", r)
	}
	// A SYN of the flow (its SYN-ACK never comes: the "server" has no
	// decapsulation); its retransmissions hit the entry too.
	peer.Do(func() error {
		c, err := (&net.Dialer{Timeout: 300 * time.Millisecond, LocalAddr: &net.TCPAddr{IP: flow.Src.AsSlice(), Port: port}}).Dial("tcp4", "198.18.100.1:80")
		if err == nil {
			c.Close()
		}
		return nil
	})
	c, err := d.Mux().Counters()
	if err != nil || c["prism_mct_hit"] == 0 {
		t.Fatalf("the SYN did not hit the MCT: %v %v", c, err)
	}
	if _, body := do(http.MethodGet, "/metrics"); !strings.Contains(body, `beamer_mux_prism_mct_entries{lb_instance="web"} 2`) {
		t.Fatalf("metrics lack the MCT size:\n%.3000s", body)
	}
	refused() // takes nothing: the controller still gets the hit
	r := collect()
	if len(r.Hit) != 1 || r.Hit[0] != flow.Signature() {
		t.Fatalf("after the SYN and a scrape: hits %x, want only %x (the scrape's sweep must keep it for the controller)", r.Hit, flow.Signature())
	}
	if r := collect(); len(r.Hit) != 0 {
		t.Fatalf("a second collection with no packet in between: hits %x", r.Hit)
	}
	if code, body := do(http.MethodPost, migration.KeepAlivePath+"?instance=nope"); code != http.StatusNotFound {
		t.Errorf("unknown instance: %d %s", code, body)
	}
	if code, _ := do(http.MethodGet, migration.KeepAlivePath+"?instance=web"); code != http.StatusMethodNotAllowed {
		t.Errorf("GET (reading clears the bits): %d, want 405", code)
	}
}
