package dataplane

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
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

func mustIndex(t *testing.T, f func(string) (int, error), dev string) int {
	t.Helper()
	i, err := f(dev)
	if err != nil {
		t.Fatal(err)
	}
	return i
}
