package controller

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// dsrLab is a server namespace (DIP 198.18.0.10 on eth0, VIP 198.18.100.1
// on lo, a service bound only to VIP:80, a status endpoint on DIP:8080,
// the agent API on DIP:9300) and a controller namespace routed to the VIP
// through the DIP; dial opens connections from the controller namespace.
type dsrLab struct {
	srv      *netlab.Namespace
	dip, vip netip.Addr
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)
}

func newDSRLab(t *testing.T) *dsrLab {
	dip, vip := netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.100.1")
	srv, cli := netlabtest.NewRig(t, "probe").Pair("srv", netip.MustParsePrefix("198.18.0.10/24"), "ctl", netip.MustParsePrefix("198.18.0.1/24"), 0)
	if err := srv.AddAddr("lo", netip.PrefixFrom(vip, 32)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Run("ip", "route", "add", "198.18.100.1/32", "via", "198.18.0.10"); err != nil {
		t.Fatal(err)
	}
	listen := func(addr string) net.Listener {
		var l net.Listener
		if err := srv.Do(func() (err error) { l, err = net.Listen("tcp4", addr); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	svc := listen("198.18.100.1:80") // the DSR service: keeps connections open until the client closes
	netlabtest.Serve(t, svc, func(c net.Conn) { io.Copy(io.Discard, c) })
	status := listen("198.18.0.10:8080") // a status endpoint on the DIP
	go http.Serve(status, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	var api *agentapi.Endpoint
	if err := srv.Do(func() (err error) {
		api, err = agentapi.Serve("198.18.0.10:9300", agentapi.Options{VIPs: []netip.Addr{vip}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	return &dsrLab{srv: srv, dip: dip, vip: vip, dial: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = cli.Do(func() error { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return err })
		return c, err
	}}
}

// TestProbesOnRealServer runs the controller's probes from a client
// namespace against a server namespace whose service is bound only to the
// VIP (direct server return) and whose agent API runs on the DIP. The
// agent probe finds it healthy and takes the DIP out of pending; the tcp
// probe to DIP:port, what the controller did before, cannot reach it and
// leaves the DIP pending with the kernel's error; the http probe checks
// the status code.
func TestProbesOnRealServer(t *testing.T) {
	l := newDSRLab(t)
	dip, vip := l.dip, l.vip
	// Generous timeout: a loaded CI machine must not turn a slow answer into a failure.
	p := newProberDial(5*time.Second, l.dial)
	ctx := storetest.Context(t)
	in := &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{vip}, PortLow: 80, PortHigh: 80, Buckets: 20}
	d := DIP{ID: 1025, Addr: dip, Weight: 1}
	for _, c := range []struct {
		h    forwarding.HealthCheck
		want string // "" = healthy
	}{
		{forwarding.HealthCheck{}, ""},
		{forwarding.HealthCheck{Kind: forwarding.HealthAgent, Port: 81}, "connection refused"},
		{forwarding.HealthCheck{Kind: forwarding.HealthAgent, AgentPort: 9301}, "agent 198.18.0.10:9301"},
		{forwarding.HealthCheck{Kind: forwarding.HealthTCP}, "connection refused"},
		{forwarding.HealthCheck{Kind: forwarding.HealthHTTP, Port: 8080, Path: "/healthz"}, ""},
		{forwarding.HealthCheck{Kind: forwarding.HealthHTTP, Port: 8080, Path: "/missing"}, "404"},
	} {
		in.Health = &c.h
		err := p.probe(ctx, in, d)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("probe %+v: %v, want %q", c.h, err, c.want)
		}
	}

	// The same through the controller: a DIP added pending comes up with
	// the agent probe; with the tcp probe it stays pending, saying why.
	for _, kind := range []forwarding.HealthKind{forwarding.HealthAgent, forwarding.HealthTCP} {
		root, clk := newRoot(), newClock()
		c := New(shared, root, Options{Now: clk.now, PendingUntilProbed: true})
		in.Health = &forwarding.HealthCheck{Kind: kind}
		if err := c.CreateInstance(ctx, in); err != nil {
			t.Fatal(err)
		}
		if err := c.AddDIP(ctx, "web", 1025, dip, 1); err != nil {
			t.Fatal(err)
		}
		logs, logger := newLogBook()
		hc := newChecker(HealthOptions{Probe: p.probe, Logger: logger})
		if err := hc.round(ctx, c); err != nil {
			t.Fatal(err)
		}
		v, err := Show(ctx, shared, root, "web", clk.now())
		if err != nil {
			t.Fatal(err)
		}
		got := v.DIPs[0]
		switch kind {
		case forwarding.HealthAgent:
			if got.Health != "up" || got.Buckets != 20 {
				t.Errorf("agent probe: DIP %s with %d buckets, want up with all 20 (logs %q)", got.Health, got.Buckets, logs.all())
			}
		case forwarding.HealthTCP:
			if got.Health != "pending" || got.Buckets != 0 || !strings.Contains(got.LastError, "refused") {
				t.Errorf("tcp probe of a VIP-bound service: %+v, want pending with the refusal", got.HealthRecord)
			}
		}
	}
}
