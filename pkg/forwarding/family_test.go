package forwarding

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func v6Instance() Instance {
	return Instance{Name: "web6", Strategy: StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("2001:db8:100::1")},
		PortLow: 80, PortHigh: 443, Buckets: 1000, ChainWindow: 4 * time.Minute}
}

// TestFamilyRules: an instance is one family, and the message says which
// rule a refused instance broke, for every entry point that validates.
func TestFamilyRules(t *testing.T) {
	ip := netip.MustParseAddr
	for name, c := range map[string]struct {
		mutate func(*Instance)
		want   string
	}{
		"mixed vips": {func(i *Instance) { i.VIPs = []netip.Addr{ip("198.18.100.1"), ip("2001:db8:100::1")} },
			"VIPs 198.18.100.1 and 2001:db8:100::1 are of different families"},
		"mixed vips, v6 first": {func(i *Instance) { i.VIPs = append(i.VIPs, ip("198.18.100.1")) },
			"VIPs 2001:db8:100::1 and 198.18.100.1 are of different families"},
		"mapped vip":    {func(i *Instance) { i.VIPs = []netip.Addr{ip("::ffff:198.18.100.1")} }, "IPv4-mapped"},
		"link-local":    {func(i *Instance) { i.VIPs = []netip.Addr{ip("fe80::1")} }, "link-local"},
		"maglev":        {func(i *Instance) { i.Strategy = StrategyMaglev; i.Buckets = 1009; i.ChainWindow = 0 }, `strategy "maglev" does not forward IPv6`},
		"beamer, ipip":  {func(*Instance) {}, "an IPv6 instance needs encap gue"},
		"duplicate vip": {func(i *Instance) { i.VIPs = append(i.VIPs, ip("2001:db8:100:0::1")) }, "listed twice"},
	} {
		in := v6Instance()
		c.mutate(&in)
		err := in.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	v4 := Instance{Name: "web", Strategy: StrategyBeamer, VIPs: []netip.Addr{ip("198.18.100.1"), ip("198.18.100.2")},
		PortLow: 80, PortHigh: 80, Buckets: 100}
	if err := v4.Validate(); err != nil {
		t.Fatalf("IPv4 instance refused: %v", err)
	}
	if v4.Family() != IPv4 || FamilyOf(ip("2001:db8::1")) != IPv6 || IPv6.String() != "IPv6" {
		t.Fatal("families")
	}
}

func TestCheckDIPFamily(t *testing.T) {
	ip := netip.MustParseAddr
	v4 := Instance{Name: "web", VIPs: []netip.Addr{ip("198.18.100.1")}}
	v6 := v6Instance()
	if err := v4.CheckDIPFamily(ip("198.18.0.10")); err != nil {
		t.Fatal(err)
	}
	if err := v6.CheckDIPFamily(ip("2001:db8::10")); err != nil {
		t.Fatal(err)
	}
	err := v4.CheckDIPFamily(ip("2001:db8::10"))
	if err == nil || !strings.Contains(err.Error(), `DIP address 2001:db8::10 is IPv6 but instance "web" is IPv4`) {
		t.Fatalf("IPv6 DIP in an IPv4 instance: %v", err)
	}
	if err := v6.CheckDIPFamily(ip("198.18.0.10")); err == nil || !strings.Contains(err.Error(), "is IPv4 but instance \"web6\" is IPv6") {
		t.Fatalf("IPv4 DIP in an IPv6 instance: %v", err)
	}
}

// TestTableFamilies: a table of IPv6 servers is valid, a table mixing the
// families is not, whichever server a map iteration meets first.
func TestTableFamilies(t *testing.T) {
	tab := NewTable(4)
	tab.Servers[1025] = Server{Addr: netip.MustParseAddr("2001:db8::10"), State: Active}
	tab.Servers[1026] = Server{Addr: netip.MustParseAddr("2001:db8::11"), State: Active}
	for i := range tab.Buckets {
		tab.Buckets[i] = Bucket{Current: 1025 + ServerID(i%2)}
	}
	if err := tab.Validate(); err != nil {
		t.Fatal(err)
	}
	add := func(gen uint32, addr string) error {
		return tab.Apply(&Delta{Generation: gen, Servers: []ServerChange{{ID: 1027, Server: Server{Addr: netip.MustParseAddr(addr), State: Active}}},
			Buckets: []BucketChange{{Index: 3, Bucket: Bucket{Current: 1027, History: Chain{1026}, Changed: 100}}}})
	}
	if err := add(1, "198.18.0.12"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "is IPv4 in a table of IPv6 servers") {
		t.Fatalf("IPv4 server into an IPv6 table: %v", err)
	}
	if err := add(1, "2001:db8::12"); err != nil || tab.Buckets[3].Current != 1027 {
		t.Fatalf("IPv6 delta: %v", err)
	}
	tab.Servers[1028] = Server{Addr: netip.MustParseAddr("198.18.0.12"), State: Retired}
	for range 20 {
		if err := tab.Validate(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "mixes IPv4 and IPv6") {
			t.Fatalf("mixed table: %v", err)
		}
	}
	delete(tab.Servers, 1028)
	tab.Servers[1026] = Server{Addr: netip.MustParseAddr("::ffff:198.18.0.11"), State: Active}
	if err := tab.Validate(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("mapped server address: %v", err)
	}
}

// TestClaimsIPv6: the rules between instances hold for IPv6 addresses: a
// VIP in two instances, a VIP that is a DIP and a DIP that is a VIP are
// refused; one server may serve an IPv4 and an IPv6 instance.
func TestClaimsIPv6(t *testing.T) {
	ip := netip.MustParseAddr
	c := NewClaims()
	web6 := &Instance{Name: "web6", VIPs: []netip.Addr{ip("2001:db8:100::1")}}
	if err := c.AddInstance(web6); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDIP("web6", 1025, ip("2001:db8::10")); err != nil {
		t.Fatal(err)
	}
	if err := c.AddInstance(&Instance{Name: "api6", VIPs: []netip.Addr{ip("2001:db8:100::1")}}); err == nil || !strings.Contains(err.Error(), `already a VIP of instance "web6"`) {
		t.Errorf("shared IPv6 VIP: %v", err)
	}
	if err := c.AddInstance(&Instance{Name: "api6", VIPs: []netip.Addr{ip("2001:db8::10")}}); err == nil || !strings.Contains(err.Error(), "is the address of DIP 1025") {
		t.Errorf("IPv6 VIP that is a DIP: %v", err)
	}
	if err := c.AddDIP("web6", 1026, ip("2001:db8:100::1")); err == nil || !strings.Contains(err.Error(), `is a VIP of instance "web6"`) {
		t.Errorf("IPv6 DIP that is a VIP: %v", err)
	}
	if err := c.AddDIP("web6", 1027, ip("fe80::1")); err == nil || !strings.Contains(err.Error(), "link-local") {
		t.Errorf("link-local DIP: %v", err)
	}
}
