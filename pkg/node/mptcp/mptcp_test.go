package mptcp

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

func TestEndpoints(t *testing.T) {
	ns := netlabtest.NewRig(t, "mptcp").Namespace("srv")
	vip := netip.MustParseAddr("198.18.100.1")
	if err := ns.AddAddr("lo", netip.PrefixFrom(vip, 32)); err != nil {
		t.Fatal(err)
	}
	var c *Client
	if err := ns.Do(func() (err error) { c, err = Dial(); return err }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Add(Endpoint{Addr: vip, Port: 1025, Flags: FlagSignal, IfIndex: 1}); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(Endpoint{Addr: vip, Port: 1025, Flags: FlagSignal, IfIndex: 1}); err == nil {
		t.Error("duplicate endpoint accepted")
	}
	list, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Addr != vip || list[0].Port != 1025 || list[0].Flags&FlagSignal == 0 || list[0].ID == 0 {
		t.Fatalf("endpoints: %+v", list)
	}
	out, err := ns.Run("ip", "mptcp", "endpoint", "show")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ip mptcp endpoint show: %s", out)
	if err := c.Delete(list[0].ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := c.List(); len(list) != 0 {
		t.Fatalf("endpoint not deleted: %+v", list)
	}
	if err := c.Add(Endpoint{Addr: netip.MustParseAddr("::ffff:198.18.100.1"), Port: 1025}); err == nil {
		t.Error("IPv4-mapped endpoint accepted")
	}
}

// TestEndpointsIPv6: an IPv6 VIP's signal endpoint goes in as IPv6 (the
// kernel announces VIP:port in ADD_ADDR with its IPv6 address) and lists
// and deletes like an IPv4 one, beside an IPv4 one.
func TestEndpointsIPv6(t *testing.T) {
	ns := netlabtest.NewRig(t, "mptcp6").Namespace("srv")
	vip4, vip6 := netip.MustParseAddr("198.18.100.1"), netip.MustParseAddr("2001:db8:100::1")
	for _, p := range []netip.Prefix{netip.PrefixFrom(vip4, 32), netip.PrefixFrom(vip6, 128)} {
		if err := ns.AddAddr("lo", p); err != nil {
			t.Fatal(err)
		}
	}
	var c *Client
	if err := ns.Do(func() (err error) { c, err = Dial(); return err }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, a := range []netip.Addr{vip6, vip4} {
		if err := c.Add(Endpoint{Addr: a, Port: 1026, Flags: FlagSignal, IfIndex: 1}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	got := map[netip.Addr]Endpoint{}
	for _, e := range list {
		got[e.Addr] = e
	}
	if e, ok := got[vip6]; len(list) != 2 || !ok || e.Port != 1026 || e.Flags&FlagSignal == 0 || got[vip4].Port != 1026 {
		t.Fatalf("endpoints: %+v", list)
	}
	out, err := ns.Run("ip", "mptcp", "endpoint", "show")
	if err != nil || !strings.Contains(out, "2001:db8:100::1 port 1026") {
		t.Fatalf("ip mptcp endpoint show: %s, %v", out, err)
	}
	if err := c.Delete(got[vip6].ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := c.List(); len(list) != 1 || list[0].Addr != vip4 {
		t.Fatalf("after deleting the IPv6 endpoint: %+v", list)
	}
}
