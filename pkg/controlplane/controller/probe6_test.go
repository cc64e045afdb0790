package controller

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestProbesIPv6: every probe kind reaches an IPv6 DIP — the agent probe
// at [DIP]:9300 (which connects to the IPv6 VIP on the server), the tcp
// probe at [DIP]:port, the http probe at http://[DIP]:port/path.
func TestProbesIPv6(t *testing.T) {
	dip, vip := netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:100::1")
	srv, cli := netlabtest.NewRig(t, "probe6").Pair("srv", netip.PrefixFrom(dip, 64), "ctl", netip.MustParsePrefix("2001:db8::1/64"), 0)
	if err := srv.AddAddr("lo", netip.PrefixFrom(vip, 128)); err != nil {
		t.Fatal(err)
	}
	listen := func(addr netip.AddrPort) net.Listener {
		var l net.Listener
		if err := srv.Do(func() (err error) { l, err = net.Listen("tcp6", addr.String()); return err }); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	svc := listen(netip.AddrPortFrom(vip, 80)) // bound to the VIP only, as a DSR service
	go http.Serve(svc, http.NotFoundHandler())
	status := listen(netip.AddrPortFrom(dip, 8080))
	go http.Serve(status, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
		}
	}))
	var api *agentapi.Endpoint
	if err := srv.Do(func() (err error) {
		api, err = agentapi.Serve(netip.AddrPortFrom(dip, 9300).String(), agentapi.Options{VIPs: []netip.Addr{vip}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	p := newProberDial(5*time.Second, func(ctx context.Context, network, addr string) (c net.Conn, err error) {
		err = cli.Do(func() error { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return err })
		return c, err
	})
	in := &forwarding.Instance{Name: "web6", Strategy: forwarding.StrategyBeamer, Encap: forwarding.EncapGUE, VIPs: []netip.Addr{vip},
		PortLow: 80, PortHigh: 80, Buckets: 20}
	d := DIP{ID: 1025, Addr: dip, Weight: 1}
	for _, c := range []struct {
		h    forwarding.HealthCheck
		want string // "" = healthy
	}{
		{forwarding.HealthCheck{}, ""},
		{forwarding.HealthCheck{Kind: forwarding.HealthAgent, Port: 81}, "connection refused"},
		{forwarding.HealthCheck{Kind: forwarding.HealthTCP, Port: 8080}, ""},
		{forwarding.HealthCheck{Kind: forwarding.HealthTCP}, "connection refused"},
		{forwarding.HealthCheck{Kind: forwarding.HealthHTTP, Port: 8080, Path: "/healthz"}, ""},
		{forwarding.HealthCheck{Kind: forwarding.HealthHTTP, Port: 8080, Path: "/missing"}, "404"},
	} {
		in.Health = &c.h
		err := p.probe(storetest.Context(t), in, d)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("probe %+v: %v, want %q", c.h, err, c.want)
		}
	}
}
