package mptcp

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
)

func TestEndpoints(t *testing.T) {
	lab := netlabtest.New(t, "mptcp")
	ns, err := lab.Namespace("srv")
	if err != nil {
		t.Fatal(err)
	}
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
	if err := c.Add(Endpoint{Addr: netip.MustParseAddr("2001:db8::1"), Port: 1025}); err == nil {
		t.Error("IPv6 endpoint accepted")
	}
}
