package dataplane

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/vishvananda/netlink"
)

// TestServerIsTheMux: a server whose address is one of the mux's own is
// reported by name (the mux then counts it unreachable and drops its
// buckets) while the other servers still get their neighbour entries.
func TestServerIsTheMux(t *testing.T) {
	rig := netlabtest.NewRig(t, "nbr")
	mux, peer := rig.Namespace("mux"), rig.Namespace("peer")
	rig.Link(mux, "m0", netip.MustParsePrefix("198.18.0.1/24"), peer, "p0", netip.MustParsePrefix("198.18.0.2/24"), 0)
	err := EnsureNeighbors(mux.Netlink(), []netip.Addr{netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.1")})
	if err == nil || err.Error() != "server 198.18.0.1 is an address of this mux" {
		t.Fatalf("server = mux: %v", err)
	}
	if !isManaged(mux.Netlink(), mustIndex(t, mux.LinkIndex, "m0"), netip.MustParseAddr("198.18.0.10").AsSlice()) {
		t.Fatal("the other server got no managed neighbour entry")
	}
	if err := EnsureNeighbors(mux.Netlink(), []netip.Addr{netip.MustParseAddr("127.0.0.1")}); err == nil || !strings.Contains(err.Error(), "is an address of this mux") {
		t.Fatalf("loopback server: %v", err)
	}
}

// TestPermanentNeighbourKept: an operator's static neighbour entry for a
// next hop stays as it is (its MAC, permanent); a dynamic one is made
// managed.
func TestPermanentNeighbourKept(t *testing.T) {
	rig := netlabtest.NewRig(t, "nbrp")
	mux, peer := rig.Namespace("mux"), rig.Namespace("peer")
	rig.Link(mux, "m0", netip.MustParsePrefix("198.18.0.1/24"), peer, "p0", netip.MustParsePrefix("198.18.0.2/24"), 0)
	link := mustIndex(t, mux.LinkIndex, "m0")
	static, dynamic := netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.11")
	mac := net.HardwareAddr{0x02, 0x00, 0x5e, 0x00, 0x00, 0x10}
	for _, n := range []*netlink.Neigh{
		{LinkIndex: link, Family: netlink.FAMILY_V4, IP: static.AsSlice(), HardwareAddr: mac, State: netlink.NUD_PERMANENT},
		{LinkIndex: link, Family: netlink.FAMILY_V4, IP: dynamic.AsSlice(), HardwareAddr: mac, State: netlink.NUD_STALE},
	} {
		if err := mux.Netlink().NeighAdd(n); err != nil {
			t.Fatal(err)
		}
	}
	if err := EnsureNeighbors(mux.Netlink(), []netip.Addr{static, dynamic}); err != nil {
		t.Fatal(err)
	}
	n := neighbour(mux.Netlink(), link, static.AsSlice())
	if n == nil || n.State != netlink.NUD_PERMANENT || n.FlagsExt&netlink.NTF_EXT_MANAGED != 0 || n.HardwareAddr.String() != mac.String() {
		t.Fatalf("the permanent entry was changed: %+v", n)
	}
	if !isManaged(mux.Netlink(), link, dynamic.AsSlice()) {
		t.Fatal("the dynamic entry was not made managed")
	}
}

func mustIndex(t *testing.T, f func(string) (int, error), dev string) int {
	t.Helper()
	i, err := f(dev)
	if err != nil {
		t.Fatal(err)
	}
	return i
}
