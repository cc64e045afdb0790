package agentapi

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"golang.org/x/sys/unix"
)

// TestHealthIPv6VIP: the controller reaches the agent API at the server's
// IPv6 address, the agent probes a service bound only to an IPv6 VIP on
// its loopback, and counts that VIP's connections per bucket from its
// AF_INET6 sockets, each in the bucket the mux's IPv6 flow hash gives.
func TestHealthIPv6VIP(t *testing.T) {
	dip6, vip6 := netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:100::1")
	srv, cli := netlabtest.NewRig(t, "agentapi6").Pair("srv", netip.PrefixFrom(dip6, 64), "cli", netip.MustParsePrefix("2001:db8::fe/64"), 0)
	if err := srv.AddAddr("lo", netip.PrefixFrom(vip6, 128)); err != nil {
		t.Fatal(err)
	}
	service := netlabtest.Listen(t, srv, nil, "tcp", netip.AddrPortFrom(vip6, 80).String())
	netlabtest.Serve(t, service, func(c net.Conn) { io.Copy(io.Discard, c) }) // close when the client does
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
	if _, err := cli.Run("ip", "-6", "route", "add", vip6.String()+"/128", "via", dip6.String()); err != nil {
		t.Fatal(err)
	}
	want := map[uint32]uint32{}
	for range 5 {
		c, err := dial("tcp", netip.AddrPortFrom(vip6, 80).String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		local := netip.MustParseAddrPort(c.LocalAddr().String())
		f := wire.Flow{Src: local.Addr(), Dst: vip6, SrcPort: local.Port(), DstPort: 80, Proto: unix.IPPROTO_TCP}
		want[f.Bucket(100)]++
	}
	var rep *ConnectionsReport
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// The server's side of a connection is ESTABLISHED once its
		// handshake's last ACK arrived, just after the client's.
		if rep, err = client.Connections(ctx(t), api, vip6, 100); err == nil && rep.Total == 5 || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || rep.Total != 5 {
		t.Fatalf("IPv6 connections per bucket: %+v, %v", rep, err)
	}
	for _, bc := range rep.Counts {
		if want[bc.Bucket] != bc.Count {
			t.Fatalf("bucket counts %+v, want %v (the IPv6 flow hash of each client → VIP tuple)", rep.Counts, want)
		}
	}
}
