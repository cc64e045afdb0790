package forwarding

import (
	"fmt"
	"net/netip"
)

// An instance is all IPv4 or all IPv6: its VIPs and its servers share one
// family. Mixed families would need more than a second address per server:
// a server answers clients directly from the VIP (direct server return)
// over its own routes of the VIP's family, and the agent's local-socket
// lookup, its SYN-cookie check and daisy chaining to a previous owner each
// work in the family of the packet they received. Mixing is future work;
// until then every entry point (ctl, controller, static files, the store)
// refuses it with the same words.

// Family is an address family: 4 or 6.
type Family uint8

// The two families.
const (
	IPv4 Family = 4
	IPv6 Family = 6
)

func (f Family) String() string { return fmt.Sprintf("IPv%d", uint8(f)) }

// FamilyOf is a's family (IPv4-mapped IPv6 addresses, which CheckVIP and
// CheckDIP refuse, count as IPv6).
func FamilyOf(a netip.Addr) Family {
	if a.Is4() {
		return IPv4
	}
	return IPv6
}

// Family is the family of the instance's VIPs (of its first VIP: Validate
// makes sure they agree); IPv4 for an instance with no VIP.
func (in *Instance) Family() Family {
	if len(in.VIPs) == 0 {
		return IPv4
	}
	return FamilyOf(in.VIPs[0])
}

// checkFamily enforces one family per instance, and what an IPv6 instance
// needs from the rest of the configuration. Validate calls it after the
// VIPs passed CheckVIP.
func (in *Instance) checkFamily() error {
	f := in.Family()
	for _, v := range in.VIPs {
		if FamilyOf(v) != f {
			return fmt.Errorf("VIPs %v and %v are of different families: an instance is all IPv4 or all IPv6 (create one instance per family)", in.VIPs[0], v)
		}
	}
	if f == IPv4 {
		return nil
	}
	// Only strategies whose mux and agent paths handle IPv6 packets end to
	// end (StrategySpec.IPv6). The others (Maglev's connection table,
	// Prism's MCT signatures, Cheetah's cookies, AWFD's class records) key
	// their state on IPv4 flows in the data plane; an IPv6 instance of
	// theirs would be accepted here and then mis-forwarded, so it is
	// refused.
	if !in.Strategy.Spec().IPv6 {
		return fmt.Errorf("strategy %q does not forward IPv6: an IPv6 instance needs strategy %s", in.Strategy, StrategiesWith(func(s StrategySpec) bool { return s.IPv6 }))
	}
	return encapCarriesIPv6(in)
}

// encapCarriesIPv6 refuses an IPv6 instance whose encapsulation cannot
// carry its packets. IPv6 travels only in GUE: IP-in-IP's fields ride in
// an IPv4 option, and the IPv6 equivalent (a destination options header)
// is dropped or punted by many routers (RFC 7872); GUE needs none.
func encapCarriesIPv6(in *Instance) error {
	if in.Encap == EncapGUE {
		return nil
	}
	return fmt.Errorf("an IPv6 instance needs encap gue (IP-in-IP carries Beamer's fields in an IPv4 option)")
}

// CheckDIPFamily refuses a server address whose family is not the
// instance's.
func (in *Instance) CheckDIPFamily(a netip.Addr) error {
	if f := in.Family(); FamilyOf(a) != f {
		return fmt.Errorf("DIP address %v is %v but instance %q is %v: an instance's VIPs and servers share one family (direct server return answers from the VIP over the server's own routes)", a, FamilyOf(a), in.Name, f)
	}
	return nil
}
