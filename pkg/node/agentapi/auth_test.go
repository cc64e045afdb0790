package agentapi

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
)

// issueTestCerts makes, with scripts/store-certs.sh, a controller, a mux
// and an agent identity (the agent's naming 127.0.0.1) in one directory,
// and a controller identity of another CA in a second one.
func issueTestCerts(t testing.TB) (dir, foreign string) {
	t.Helper()
	dir, foreign = t.TempDir(), t.TempDir()
	if err := nodeauth.Issue(dir, "127.0.0.1", "ctl=controller", "mux1=mux@127.0.0.1", "agent1=agent@127.0.0.1", "plain"); err != nil {
		t.Fatal(err)
	}
	if err := nodeauth.Issue(foreign, "127.0.0.1", "ctl=controller"); err != nil {
		t.Fatal(err)
	}
	return dir, foreign
}

// clientAs is an HTTPS client presenting NAME's certificate of dir ("" for
// none) and trusting the CA of dir.
func clientAs(t testing.TB, dir, caDir, name string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(caDir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c := &tls.Config{RootCAs: pool}
	if name != "" {
		cert, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem"))
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: c, DisableKeepAlives: true}}
}

// Every endpoint of the agent API answers a controller certificate only: a
// mux's, an agent's, a certificate without a role get 403; no certificate
// and a controller certificate of another CA get no HTTP at all. A refused
// key push reaches nothing.
func TestAgentAPIRefusesNonControllers(t *testing.T) {
	dir, foreign := issueTestCerts(t)
	srvTLS, err := nodeauth.ServerConfig(nodeauth.FilesIn(dir, "agent1"), nodeauth.RoleAgent)
	if err != nil {
		t.Fatal(err)
	}
	var pushed atomic.Int32
	e, err := Serve("127.0.0.1:0", Options{VIPs: []netip.Addr{vip}, TLS: srvTLS,
		PushFrom: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Routes: map[string]Route{"PUT " + CheetahPath: func(s *Server, w http.ResponseWriter, r *http.Request) {
			if s.PushAllowed(r, "cheetah keys") == nil {
				pushed.Add(1)
			}
			WriteJSON(w, http.StatusOK, CheetahReport{})
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	base := "https://" + e.Addr().String()
	push := `{"vip":"198.18.100.1","id":1030,"keys":{"current":0,"keys":["0102030405060708090a0b0c0d0e0f10","0102030405060708090a0b0c0d0e0f11"]}}`
	endpoints := []struct{ method, path, body string }{
		{"GET", HealthPath + "?vip=198.18.100.1&port=80&timeout_ms=50", ""},
		{"GET", ConnectionsPath + "?vip=198.18.100.1&buckets=16", ""},
		{"GET", SignaturesPath + "?vip=198.18.100.1", ""},
		{"GET", CapacityPath, ""},
		{"PUT", CheetahPath, push},
	}
	do := func(c *http.Client, method, path, body string) (int, error) {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader([]byte(body)))
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, ep := range endpoints {
		for _, who := range []string{"mux1", "agent1", "plain"} {
			code, err := do(clientAs(t, dir, dir, who), ep.method, ep.path, ep.body)
			if err != nil || code != http.StatusForbidden {
				t.Errorf("%s %s as %s: %d %v, want 403", ep.method, ep.path, who, code, err)
			}
		}
		for _, c := range []struct {
			who    string
			client *http.Client
		}{{"no certificate", clientAs(t, dir, dir, "")}, {"a controller of another CA", clientAs(t, foreign, dir, "ctl")}} {
			if code, err := do(c.client, ep.method, ep.path, ep.body); err == nil {
				t.Errorf("%s %s with %s: answered %d, want the handshake refused", ep.method, ep.path, c.who, code)
			}
		}
		// The controller passes authorization (what follows is the
		// endpoint's own answer: no 403).
		code, err := do(clientAs(t, dir, dir, "ctl"), ep.method, ep.path, ep.body)
		if err != nil || code == http.StatusForbidden {
			t.Errorf("%s %s as the controller: %d %v", ep.method, ep.path, code, err)
		}
	}
	if n := pushed.Load(); n != 1 {
		t.Errorf("the key handler ran %d times, want once (the controller's push only)", n)
	}
	// The controller's own client (nodeauth.ClientConfig) verifies the
	// agent's certificate and carries the role.
	cc, err := nodeauth.ClientConfig(nodeauth.FilesIn(dir, "ctl"))
	if err != nil {
		t.Fatal(err)
	}
	ac := &Client{HTTP: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cc}}, Scheme: "https"}
	if _, err := ac.Capacity(t.Context(), netip.MustParseAddrPort(e.Addr().String())); err == nil || strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "certificate") {
		t.Errorf("controller client: %v (want the agent's own answer: no capacity configured)", err)
	}
}
