package agentapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

var (
	vip     = netip.MustParseAddr("198.18.100.1")
	dip     = netip.MustParseAddr("198.18.0.10")
	outside = netip.MustParseAddr("198.18.0.1")
)

// serverLab is one server namespace (DIP on eth0, VIP on lo, a service
// bound only to VIP:80, the agent API on DIP) and one client namespace
// (the controller's side) routed to the VIP through the server's DIP.
type serverLab struct {
	srv, cli *netlab.Namespace
	api      netip.AddrPort
	client   *Client
	service  net.Listener
	mu       sync.Mutex
	accepted []net.Conn
}

func newServerLab(t testing.TB) *serverLab {
	l := &serverLab{}
	l.srv, l.cli = netlabtest.NewRig(t, "agentapi").Pair("srv", netip.PrefixFrom(dip, 24), "cli", netip.PrefixFrom(outside, 24), 0)
	if err := l.srv.AddAddr("lo", netip.PrefixFrom(vip, 32)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cli.Run("ip", "route", "add", vip.String()+"/32", "via", dip.String()); err != nil {
		t.Fatal(err)
	}
	// The DSR service: bound to the VIP only, so DIP:80 refuses.
	l.service = netlabtest.Listen(t, l.srv, nil, "tcp4", vip.String()+":80")
	netlabtest.Serve(t, l.service, func(c net.Conn) {
		l.mu.Lock()
		l.accepted = append(l.accepted, c)
		l.mu.Unlock()
		io.Copy(io.Discard, c) // close when the client does
	})
	var e *Endpoint
	if err := l.srv.Do(func() (err error) { e, err = Serve(dip.String()+":0", Options{VIPs: []netip.Addr{vip}}); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	l.api = netip.MustParseAddrPort(e.Addr().String())
	// The controller's side dials from the client namespace.
	l.client = &Client{HTTP: &http.Client{Transport: &http.Transport{DialContext: l.dialCli}}}
	return l
}

func (l *serverLab) dialCli(ctx context.Context, network, addr string) (c net.Conn, err error) {
	err = l.cli.Do(func() error {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestHealthProbesVIPBoundService: a service bound only to the VIP is
// healthy through the agent, while the old probe (connect to DIP:port from
// outside) fails on the very same server; a port without a service fails
// with the kernel's reason; bad requests get clear 400s.
func TestHealthProbesVIPBoundService(t *testing.T) {
	l := newServerLab(t)
	if err := l.client.Health(ctx(t), l.api, vip, 80, time.Second); err != nil {
		t.Fatalf("VIP-bound service probed through the agent: %v", err)
	}
	// Negative control: what a direct probe of DIP:80 sees.
	if c, err := l.dialCli(ctx(t), "tcp4", dip.String()+":80"); err == nil {
		c.Close()
		t.Fatal("DIP:80 answered; the service must be bound to the VIP only for this test to mean anything")
	}
	err := l.client.Health(ctx(t), l.api, vip, 81, time.Second)
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("probe of a port without service: %v, want connection refused", err)
	}
	for _, c := range []struct{ query, want string }{
		{"vip=198.18.100.2&port=80", "not served by this agent"},
		{"vip=nonsense&port=80", "not an IPv4 or IPv6 address"},
		{"vip=2001:db8:100::1&port=80", "not served by this agent"},
		{"vip=198.18.100.1&port=0", "port"},
		{"vip=198.18.100.1&port=70000", "port"},
		{"vip=198.18.100.1&port=80&timeout_ms=600000", "timeout_ms"},
	} {
		body, code := l.raw(t, HealthPath+"?"+c.query)
		if code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("GET %s?%s: %d %s, want 400 naming %q", HealthPath, c.query, code, body, c.want)
		}
	}
	for _, q := range []string{"vip=198.18.100.1&buckets=0", "vip=198.18.100.1&buckets=99999999999", "vip=198.18.100.1"} {
		if body, code := l.raw(t, ConnectionsPath+"?"+q); code != http.StatusBadRequest || !strings.Contains(body, "buckets") {
			t.Errorf("GET %s?%s: %d %s, want 400 about buckets", ConnectionsPath, q, code, body)
		}
	}
}

func (l *serverLab) raw(t *testing.T, pathQuery string) (string, int) {
	req, _ := http.NewRequestWithContext(ctx(t), http.MethodGet, "http://"+l.api.String()+pathQuery, nil)
	resp, err := l.client.HTTP.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode
}

// TestConnectionsReportLiveSockets opens real connections to the VIP and
// checks the agent's per-bucket report against buckets computed from the
// clients' own 5-tuples; closed connections leave the report.
func TestConnectionsReportLiveSockets(t *testing.T) {
	l := newServerLab(t)
	const n, buckets = 40, 16 // fewer buckets than connections: some share one
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := l.dialCli(ctx(t), "tcp4", vip.String()+":80")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	want := func(cs []net.Conn) map[uint32]uint32 {
		m := map[uint32]uint32{}
		for _, c := range cs {
			a := netip.MustParseAddrPort(c.LocalAddr().String())
			m[wire.Flow{Src: a.Addr(), Dst: vip, SrcPort: a.Port(), DstPort: 80, Proto: 6}.Bucket(buckets)]++
		}
		return m
	}
	check := func(cs []net.Conn) error {
		rep, err := l.client.Connections(ctx(t), l.api, vip, buckets)
		if err != nil {
			return err
		}
		got := map[uint32]uint32{}
		for _, bc := range rep.Counts {
			got[bc.Bucket] = bc.Count
		}
		w := want(cs)
		if len(got) != len(w) || int(rep.Total) != len(cs) {
			return errors.New("bucket sets differ")
		}
		for b, c := range w {
			if got[b] != c {
				return errors.New("counts differ")
			}
		}
		return nil
	}
	// The accept side needs a moment to finish the handshakes.
	if err := eventually(func() error { return check(conns) }); err != nil {
		rep, _ := l.client.Connections(ctx(t), l.api, vip, buckets)
		t.Fatalf("report %+v, want %v: %v", rep, want(conns), err)
	}
	if len(want(conns)) < 2 {
		t.Fatalf("all %d connections in one bucket: the test would not tell buckets apart", n)
	}
	for _, c := range conns[:15] {
		c.Close()
	}
	if err := eventually(func() error { return check(conns[15:]) }); err != nil {
		rep, _ := l.client.Connections(ctx(t), l.api, vip, buckets)
		t.Fatalf("after closing 15: report %+v, want %v: %v", rep, want(conns[15:]), err)
	}
}

// eventually retries for up to 5 s: sockets change state asynchronously.
func eventually(f func() error) error {
	var err error
	for range 50 {
		if err = f(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}
