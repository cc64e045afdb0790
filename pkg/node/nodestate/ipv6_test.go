package nodestate

import (
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestIPv6VIPAndForwarding: an IPv6 VIP goes on loopback as a /128 (not a
// /32, which would swallow the whole 2001:db8::/32 into lo), usable at
// once; IPv6 forwarding is switched on with accept_ra 1 raised to 2; Undo
// puts back all three.
func TestIPv6VIPAndForwarding(t *testing.T) {
	ns := netlabtest.NewRig(t, "nodestate6").Namespace("node")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sysctl := func(key string) string {
		out, err := ns.Run("sysctl", "-n", key)
		must(err)
		return strings.TrimSpace(out)
	}
	must(ns.Sysctl("net.ipv6.conf.lo.accept_ra", "1"))
	must(ns.Sysctl("net.ipv6.conf.lo.forwarding", "0"))
	vip := netip.MustParseAddr("2001:db8:100::1")
	var rec *Record
	must(ns.Do(func() (err error) {
		if rec, err = Open(filepath.Join(t.TempDir(), "rec.json")); err != nil {
			return err
		}
		if err := rec.AddLoAddr(vip); err != nil {
			return err
		}
		return rec.SetIPv6Forwarding("lo")
	}))
	out, err := ns.Run("ip", "-6", "addr", "show", "dev", "lo")
	must(err)
	if !strings.Contains(out, "inet6 2001:db8:100::1/128") || strings.Contains(out, "tentative") {
		t.Fatalf("VIP on lo:\n%s", out)
	}
	if sysctl("net.ipv6.conf.lo.forwarding") != "1" || sysctl("net.ipv6.conf.lo.accept_ra") != "2" {
		t.Fatal("IPv6 forwarding or accept_ra not set")
	}
	must(ns.Do(rec.Undo))
	out, err = ns.Run("ip", "-6", "addr", "show", "dev", "lo")
	must(err)
	if strings.Contains(out, "2001:db8:100::1") {
		t.Fatalf("VIP left on lo:\n%s", out)
	}
	if sysctl("net.ipv6.conf.lo.forwarding") != "0" || sysctl("net.ipv6.conf.lo.accept_ra") != "1" {
		t.Fatal("IPv6 sysctls not restored")
	}
	var missing *Record
	must(ns.Do(func() (err error) { missing, err = Open(filepath.Join(t.TempDir(), "rec2.json")); return err }))
	if err := ns.Do(func() error { return missing.SetIPv6Forwarding("nosuch0") }); err == nil || !strings.Contains(err.Error(), "IPv6 on nosuch0") {
		t.Fatalf("missing interface: %v", err)
	}
}
