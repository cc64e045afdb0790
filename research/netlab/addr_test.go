package netlab_test

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestAddresses: a lab takes addresses from 198.18.0.0/15 and 2001:db8::/32
// only, and an IPv6 address is usable at once (no duplicate address
// detection holding it tentative): a socket binds to it right away.
func TestAddresses(t *testing.T) {
	lab := netlabtest.New(t, "addr")
	a, err := lab.Namespace("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := lab.Namespace("b")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth(a, "eth0", netip.MustParsePrefix("2001:db8::1/64"), b, "eth0", netip.MustParsePrefix("198.18.0.2/24"), 0); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"10.0.0.1/24", "192.0.2.1/24", "2001:db9::1/64", "fd00::1/64", "198.20.0.1/24"} {
		if err := a.AddAddr("eth0", netip.MustParsePrefix(bad)); err == nil || !strings.Contains(err.Error(), "outside the lab ranges") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	out, err := a.Run("ip", "-6", "addr", "show", "dev", "eth0")
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "2001:db8::1/64") {
			line = l
		}
	}
	if !strings.Contains(line, "nodad") || strings.Contains(line, "tentative") {
		t.Fatalf("IPv6 address not usable at once:\n%s", out)
	}
	if err := a.Do(func() error {
		l, err := net.Listen("tcp6", "[2001:db8::1]:0")
		if err == nil {
			l.Close()
		}
		return err
	}); err != nil {
		t.Fatalf("binding the new IPv6 address at once: %v", err)
	}
}
