package muxd

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestVIPIsOwnAddress: an instance whose VIP is the mux's own address
// (given or found on the interface) is refused with the reason.
func TestVIPIsOwnAddress(t *testing.T) {
	ip := netip.MustParseAddr
	mux, mux6 := ip("198.18.0.1"), ip("2001:db8::1")
	for _, c := range []struct {
		vip  string
		want string
	}{
		{"198.18.100.1", ""},
		{"198.18.0.1", `instance "web": VIP 198.18.0.1 is this mux's own address`},
		{"2001:db8::1", `instance "web": VIP 2001:db8::1 is this mux's own address`},
	} {
		err := checkNotOwnAddress(forwarding.Instance{Name: "web", VIPs: []netip.Addr{ip(c.vip)}}, mux, mux6)
		if (err == nil) != (c.want == "") || (err != nil && !strings.HasPrefix(err.Error(), c.want)) {
			t.Errorf("VIP %s: %v, want %q", c.vip, err, c.want)
		}
	}
	if err := checkNotOwnAddress(forwarding.Instance{Name: "web", VIPs: []netip.Addr{ip("198.18.100.1")}}, netip.Addr{}, netip.Addr{}); err != nil {
		t.Errorf("a mux without an IPv6 address: %v", err)
	}
}
