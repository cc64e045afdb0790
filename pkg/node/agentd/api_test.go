package agentd

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/research/netlab"
)

// checkAPI: the daemon serves the agent API by default on DIP:9300 (not
// on the VIP, which clients reach), and its
// health probe reaches a service bound only to the VIP the daemon put on
// loopback, from the server's own namespace.
func checkAPI(t *testing.T, ns *netlab.Namespace, d *Daemon) {
	t.Helper()
	a := d.APIAddr()
	if a == nil || a.String() != "198.18.0.10:9300" {
		t.Fatalf("agent API on %v, want the default DIP:9300", a)
	}
	vip := netip.MustParseAddr("198.18.100.1")
	var l net.Listener
	if err := ns.Do(func() (err error) { l, err = net.Listen("tcp4", "198.18.100.1:8080"); return err }); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c := &agentapi.Client{HTTP: &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, n, addr string) (conn net.Conn, err error) {
		err = ns.Do(func() error { conn, err = (&net.Dialer{}).DialContext(ctx, n, addr); return err })
		return conn, err
	}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	api := netip.MustParseAddrPort("198.18.0.10:9300")
	if err := c.Health(ctx, api, vip, 8080, time.Second); err != nil {
		t.Errorf("probe of a VIP-bound service through the daemon's API: %v", err)
	}
	if err := c.Health(ctx, api, vip, 8081, time.Second); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("probe of a closed port: %v, want refused", err)
	}
}

// A plaintext agent API off loopback is refused unless --insecure, before
// the agent changes anything; on loopback it is allowed.
func TestAgentPlaintextAPIRefused(t *testing.T) {
	ns := agentLab(t)
	opts := testOptions(t)
	opts.APIInsecure = false
	cfg := lifecycleConfig()
	cfg.API = "198.18.0.10:9300"
	var d *Daemon
	err := ns.Do(func() (err error) { d, err = Start(cfg, opts); return err })
	if err == nil {
		ns.Do(d.Close)
		t.Fatal("a plaintext API on the DIP started without --insecure")
	}
	if !strings.Contains(err.Error(), "agent API on 198.18.0.10:9300 without TLS") || !strings.Contains(err.Error(), "--insecure") {
		t.Errorf("error %q", err)
	}
	checkNoLeftovers(t, ns, opts)
	cfg.API = "127.0.0.1:9300"
	if err := ns.Do(func() (err error) { d, err = Start(cfg, opts); return err }); err != nil {
		t.Fatalf("a plaintext API on loopback: %v", err)
	}
	if err := ns.Do(d.Close); err != nil {
		t.Fatal(err)
	}
}
