package forwarding

import (
	"fmt"
	"net/netip"
)

// Addresses enter Beamer in three places — `beamer ctl` requests, static
// YAML files and the store — and every one of them goes through the checks
// of this file, so that one bad address gets the same clear refusal
// wherever it is typed. A VIP or DIP that cannot carry unicast traffic
// would otherwise be accepted, handed to every mux of the instance and fail
// there (a broadcast DIP made every mux retry a full table replace forever).

// MaxWeight bounds DIP weights; weights are relative, so this is plenty and
// keeps weight sums far from overflow at 65 511 DIPs. A weight of 0 is never
// accepted: taking a DIP out of rotation is `drain` (or `remove-dip`), which
// keeps its connections alive by daisy chaining.
const MaxWeight = 1_000_000

// notUnicast says why a is no address a VIP or a DIP can be ("" when it
// can): only unicast addresses routable beyond the host are, IPv4 or IPv6.
func notUnicast(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "missing"
	case a.Is4In6():
		// The data plane keys VIPs and servers by their native family; a
		// mapped address would be a second spelling of an IPv4 one.
		return "an IPv4-mapped IPv6 address (write it as IPv4)"
	case a.Zone() != "":
		return "an address with a zone (zones name a link, VIPs and servers are routed)"
	case a.Is6():
		return notUnicast6(a)
	case a.IsUnspecified():
		return "the unspecified address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	case a.IsLoopback():
		return "a loopback address (127.0.0.0/8)"
	case a.IsMulticast():
		return "a multicast address (224.0.0.0/4)"
	case a.IsLinkLocalUnicast():
		return "a link-local address (169.254.0.0/16)"
	case a.As4()[0] == 0:
		return "in 0.0.0.0/8 (\"this network\", never a destination)"
	case a.As4()[0] >= 240:
		return "in the reserved block 240.0.0.0/4"
	}
	return ""
}

// v4compat is ::/96, the deprecated IPv4-compatible IPv6 addresses.
var v4compat = netip.MustParsePrefix("::/96")

// notUnicast6 is notUnicast for IPv6 addresses (not mapped, no zone).
func notUnicast6(a netip.Addr) string {
	switch {
	case a.IsUnspecified():
		return "the unspecified address (::)"
	case a.IsLoopback():
		return "the loopback address (::1)"
	case a.IsMulticast():
		return "a multicast address (ff00::/8)"
	case a.IsLinkLocalUnicast():
		return "a link-local address (fe80::/10)"
	case v4compat.Contains(a):
		return "in ::/96 (IPv4-compatible addresses, deprecated by RFC 4291)"
	}
	return ""
}

// CheckVIP refuses a VIP that is not a unicast IPv4 or IPv6 address.
func CheckVIP(a netip.Addr) error {
	if !a.IsValid() {
		return fmt.Errorf("VIP missing: a VIP must be a unicast IPv4 or IPv6 address")
	}
	if why := notUnicast(a); why != "" {
		return fmt.Errorf("VIP %v is %s: a VIP must be a unicast IPv4 or IPv6 address", a, why)
	}
	return nil
}

// CheckDIP refuses a server (DIP) address that is not a unicast IPv4 or
// IPv6 address. Whether it collides with a VIP is Claims' business, whether
// its family is its instance's is Instance.CheckDIPFamily's.
func CheckDIP(a netip.Addr) error {
	if !a.IsValid() {
		return fmt.Errorf("DIP address missing: a server needs a unicast IPv4 or IPv6 address")
	}
	if why := notUnicast(a); why != "" {
		return fmt.Errorf("DIP address %v is %s: a server needs a unicast IPv4 or IPv6 address", a, why)
	}
	return nil
}

// CheckWeight refuses a weight outside 1–MaxWeight.
func CheckWeight(w uint32) error {
	if w == 0 || w > MaxWeight {
		return fmt.Errorf("weight %d must be in 1–%d (weight 0 is not a way to take a DIP out: drain or remove it, so its connections finish)", w, MaxWeight)
	}
	return nil
}
