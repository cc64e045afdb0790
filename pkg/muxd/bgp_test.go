package muxd

import (
	"context"
	"net/netip"
	"testing"
)

func TestParseBGPPeer(t *testing.T) {
	p, err := ParseBGPPeer("198.18.0.254:65000")
	if err != nil || p.Addr != netip.MustParseAddr("198.18.0.254") || p.ASN != 65000 {
		t.Fatalf("got %+v, %v", p, err)
	}
	for _, bad := range []string{"198.18.0.254", "198.18.0.254:0", "198.18.0.254:x", "router:65000", "[2001:db8::1]:65000", ":65000", "198.18.0.254:4294967296"} {
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
		"no ASN":     {NextHop: hop, Peers: peer},
		"no peer":    {ASN: 65001, NextHop: hop},
		"no nexthop": {ASN: 65001, Peers: peer},
		"short hold": {ASN: 65001, NextHop: hop, Peers: peer, HoldTime: 1e9},
	} {
		if a, err := StartBGP(ctx, o); err == nil {
			a.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}
