package agentapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
)

// TestHealthIPv6VIP: the controller reaches the agent API at the server's
// IPv6 address, and the agent probes a service bound only to an IPv6 VIP
// on its loopback; counting that VIP's connections per bucket is refused
// (no IPv6 flow hash in the Go model yet) rather than answered with a
// count that would let the controller drop a bucket holding connections.
func TestHealthIPv6VIP(t *testing.T) {
	lab := netlabtest.New(t, "agentapi6")
	srv, err := lab.Namespace("srv")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := lab.Namespace("cli")
	if err != nil {
		t.Fatal(err)
	}
	dip6, vip6 := netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:100::1")
	if err := lab.Veth(srv, "eth0", netip.PrefixFrom(dip6, 64), cli, "eth0", netip.MustParsePrefix("2001:db8::fe/64"), 0); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddAddr("lo", netip.PrefixFrom(vip6, 128)); err != nil {
		t.Fatal(err)
	}
	var service net.Listener
	if err := srv.Do(func() (err error) {
		service, err = net.Listen("tcp", netip.AddrPortFrom(vip6, 80).String())
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer service.Close()
	var e *Endpoint
	if err := srv.Do(func() (err error) {
		e, err = Serve(netip.AddrPortFrom(dip6, 0).String(), Options{VIPs: []netip.Addr{vip6}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	api := netip.MustParseAddrPort(e.Addr().String())
	dial := func(network, addr string) (c net.Conn, err error) {
		err = cli.Do(func() error { c, err = net.DialTimeout(network, addr, 5*time.Second); return err })
		return c, err
	}
	client := &Client{HTTP: &http.Client{Transport: &http.Transport{Dial: dial}}}
	if err := client.Health(ctx(t), api, vip6, 80, time.Second); err != nil {
		t.Fatalf("IPv6 VIP-bound service probed through the agent at %v: %v", api, err)
	}
	if err := client.Health(ctx(t), api, vip6, 81, time.Second); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("probe of a port without service: %v", err)
	}
	if _, err := client.Connections(ctx(t), api, vip6, 100); err == nil || !strings.Contains(err.Error(), "needs the IPv6 flow hash") {
		t.Fatalf("IPv6 connections per bucket: %v", err)
	}
}
