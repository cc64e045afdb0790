package muxd

import (
	"context"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestParseBGPPeer(t *testing.T) {
	p, err := ParseBGPPeer("198.18.0.254:65000")
	if err != nil || p.Addr != netip.MustParseAddr("198.18.0.254") || p.ASN != 65000 {
		t.Fatalf("got %+v, %v", p, err)
	}
	p, err = ParseBGPPeer("[2001:db8::fe]:65000")
	if err != nil || p.Addr != netip.MustParseAddr("2001:db8::fe") || p.ASN != 65000 {
		t.Fatalf("IPv6 peer: got %+v, %v", p, err)
	}
	for _, bad := range []string{"198.18.0.254", "198.18.0.254:0", "198.18.0.254:x", "router:65000", "2001:db8::1:65000", "[198.18.0.254]:65000",
		"[fe80::1%eth0]:65000", "[::ffff:198.18.0.254]:65000", "[2001:db8::1]", ":65000", "198.18.0.254:4294967296"} {
		if _, err := ParseBGPPeer(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestStartBGPRejects(t *testing.T) {
	ctx := context.Background()
	hop := netip.MustParseAddr("198.18.0.1")
	peer := []BGPPeer{{Addr: netip.MustParseAddr("198.18.0.254"), ASN: 65000}}
	for name, o := range map[string]BGPOptions{
		"no ASN":                      {NextHop: hop, Peers: peer},
		"no peer":                     {ASN: 65001, NextHop: hop},
		"no nexthop":                  {ASN: 65001, Peers: peer},
		"short hold":                  {ASN: 65001, NextHop: hop, Peers: peer, HoldTime: 1e9},
		"IPv6 peer, no IPv6 next hop": {ASN: 65001, NextHop: hop, Peers: []BGPPeer{{Addr: netip.MustParseAddr("2001:db8::fe"), ASN: 65000}}},
		"IPv6 next hop in NextHop":    {ASN: 65001, NextHop: netip.MustParseAddr("2001:db8::1"), Peers: peer},
		"IPv4 in NextHop6":            {ASN: 65001, NextHop: hop, NextHop6: hop, Peers: peer},
		"IPv6 router id":              {ASN: 65001, NextHop: hop, RouterID: netip.MustParseAddr("2001:db8::1"), Peers: peer},
		"IPv6 only, no router id":     {ASN: 65001, NextHop6: netip.MustParseAddr("2001:db8::1"), Peers: []BGPPeer{{Addr: netip.MustParseAddr("2001:db8::fe"), ASN: 65000}}},
		"IPv4 peer, no IPv4 next hop": {ASN: 65001, RouterID: hop, NextHop6: netip.MustParseAddr("2001:db8::1"), Peers: peer},
	} {
		if a, err := StartBGP(ctx, o); err == nil {
			a.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestIPv6VIPNeedsNextHop6: an announcer without an IPv6 address refuses
// to announce an IPv6 VIP, saying why, and still announces the IPv4 ones.
func TestIPv6VIPNeedsNextHop6(t *testing.T) {
	router := startTestRouter(t)
	a, err := StartBGP(context.Background(), BGPOptions{ASN: 65001, NextHop: netip.MustParseAddr("127.0.0.2"), Peers: []BGPPeer{router.peer()}})
	must(t, err)
	defer a.Close()
	err = a.Set(context.Background(), []netip.Addr{netip.MustParseAddr("198.18.100.1"), netip.MustParseAddr("2001:db8:100::1")})
	if err == nil || !strings.Contains(err.Error(), "VIP 2001:db8:100::1 is IPv6 but the mux has no IPv6 address to announce as its next hop") {
		t.Fatalf("IPv6 VIP without an IPv6 next hop: %v", err)
	}
	if !router.has(t, netip.MustParseAddr("198.18.100.1"), true, 10*time.Second) {
		t.Fatal("the IPv4 VIP was not announced beside the refused IPv6 one")
	}
}
