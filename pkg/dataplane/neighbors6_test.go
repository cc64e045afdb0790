package dataplane

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestIPv6ServerNeighbors: an IPv6 server on the mux's link gets a managed
// neighbour-discovery entry, an IPv6 server behind a router gets one for
// the router, and an IPv6 address of the mux itself is reported.
func TestIPv6ServerNeighbors(t *testing.T) {
	rig := netlabtest.NewRig(t, "nbr6")
	mux, peer := rig.Namespace("mux"), rig.Namespace("peer")
	rig.Link(mux, "m0", netip.MustParsePrefix("2001:db8::1/64"), peer, "p0", netip.MustParsePrefix("2001:db8::2/64"), 0)
	if _, err := mux.Run("ip", "-6", "route", "add", "2001:db8:1::/64", "via", "2001:db8::2"); err != nil {
		t.Fatal(err)
	}
	err := EnsureNeighbors(mux.Netlink(), []netip.Addr{netip.MustParseAddr("2001:db8::10"), netip.MustParseAddr("2001:db8:1::10"), netip.MustParseAddr("2001:db8::1")})
	if err == nil || err.Error() != "server 2001:db8::1 is an address of this mux" {
		t.Fatalf("server = mux: %v", err)
	}
	link := mustIndex(t, mux.LinkIndex, "m0")
	for _, hop := range []string{"2001:db8::10", "2001:db8::2"} {
		if !isManaged(mux.Netlink(), link, netip.MustParseAddr(hop).AsSlice()) {
			t.Errorf("no managed neighbour entry for %s", hop)
		}
	}
	if isManaged(mux.Netlink(), link, netip.MustParseAddr("2001:db8:1::10").AsSlice()) {
		t.Error("a server behind the router got a neighbour entry of its own")
	}
}
