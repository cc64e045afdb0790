package forwarding

import (
	"net/netip"
	"testing"
)

func TestAddressChecks(t *testing.T) {
	for a, why := range map[string]string{
		"198.18.0.10": "", "10.1.2.3": "", "192.0.2.1": "",
		"0.0.0.0":         "the unspecified address",
		"0.1.2.3":         "in 0.0.0.0/8 (\"this network\", never a destination)",
		"255.255.255.255": "the broadcast address",
		"127.0.0.1":       "a loopback address (127.0.0.0/8)",
		"127.9.9.9":       "a loopback address (127.0.0.0/8)",
		"224.0.0.1":       "a multicast address (224.0.0.0/4)",
		"169.254.9.9":     "a link-local address (169.254.0.0/16)",
		"240.0.0.1":       "in the reserved block 240.0.0.0/4",
		"2001:db8::1":     "",
		"2001:db8:0:1::a": "",
		"fd00::1":         "",
		"::ffff:10.0.0.1": "an IPv4-mapped IPv6 address (write it as IPv4)",
		"::":              "the unspecified address (::)",
		"::1":             "the loopback address (::1)",
		"ff02::1":         "a multicast address (ff00::/8)",
		"fe80::1":         "a link-local address (fe80::/10)",
		"fe80::1%eth0":    "an address with a zone (zones name a link, VIPs and servers are routed)",
		"2001:db8::1%2":   "an address with a zone (zones name a link, VIPs and servers are routed)",
		"::198.18.0.1":    "in ::/96 (IPv4-compatible addresses, deprecated by RFC 4291)",
	} {
		if got := notUnicast(netip.MustParseAddr(a)); got != why {
			t.Errorf("%s: %q, want %q", a, got, why)
		}
	}
	if notUnicast(netip.Addr{}) != "missing" {
		t.Error("zero address accepted")
	}
}

func TestMaglevSizeMessage(t *testing.T) {
	for size, want := range map[uint32]string{
		101:        "",
		4:          "maglev table size 4 is not prime (Maglev needs a prime size): the nearest primes are 3 and 5",
		MaxBuckets: "maglev table size 16777216 is not prime (Maglev needs a prime size): the nearest prime is 16777213",
	} {
		err := CheckMaglevTableSize(size)
		if (err == nil) != (want == "") || (err != nil && err.Error() != want) {
			t.Errorf("%d: %v, want %q", size, err, want)
		}
	}
}

// TestClaimsOldConflicts: conflicts recorded before the rules existed are
// kept with their first owner and do not block other addresses.
func TestClaimsOldConflicts(t *testing.T) {
	ip := netip.MustParseAddr
	c := NewClaims()
	a := &Instance{Name: "a", VIPs: []netip.Addr{ip("192.0.2.1")}}
	b := &Instance{Name: "b", VIPs: []netip.Addr{ip("192.0.2.1"), ip("192.0.2.2")}}
	if err := c.AddInstance(a); err != nil {
		t.Fatal(err)
	}
	if err := c.AddInstance(b); err == nil {
		t.Fatal("shared VIP accepted")
	}
	if err := c.AddInstance(b); err == nil {
		t.Fatal("the second owner became an owner")
	}
	if err := c.AddDIP("b", 1025, ip("192.0.2.2")); err == nil {
		t.Fatal("DIP = VIP of b accepted")
	}
	if err := c.AddDIP("a", 1025, ip("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDIP("b", 1025, ip("10.0.0.1")); err != nil {
		t.Fatalf("one server in two instances: %v", err)
	}
}
