package lab

import (
	"fmt"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// The lab's IPv6 plan (Params.Family 6), in 2001:db8::/32 (RFC 3849), laid
// over the IPv4 one: every fabric and client link carries both families.
// The store, the controller's requests and the BGP sessions stay on IPv4
// (the sessions carry the IPv6 unicast family too); the load balanced
// service, its servers' addresses (DIPs), the encapsulation (GUE over
// IPv6) and the clients' traffic are IPv6.
//
//	2001:db8::/64        fabric: muxes ::1–::9, servers ::10–::69 (hex), controller ::fa, router ::fe
//	2001:db8:1::/64      clients' first path, router ::fe
//	2001:db8:2::/64      clients' second path (MPTCP subflows), router ::fe
//	2001:db8:100::1      the VIP
var (
	VIP6 = netip.MustParseAddr("2001:db8:100::1")

	fabricNet6    = netip.MustParsePrefix("2001:db8::/64")
	labRange6     = netip.MustParsePrefix("2001:db8::/32")
	ctlAddr6      = addr6(0, 0xfa)
	routerFabric6 = addr6(0, 0xfe)
)

// fabricMTU6 leaves room for GUE over IPv6 with the longest private data:
// 40 + 8 + 4 + 16 + 6 × 16 = 164 bytes over a client's 1500.
const fabricMTU6 = 1700

// addr6 is 2001:db8:NET::HOST.
func addr6(net, host int) netip.Addr {
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(net), 14: byte(host >> 8), 15: byte(host)})
}

func muxAddr6(i int) netip.Addr    { return addr6(0, 1+i) }
func serverAddr6(i int) netip.Addr { return addr6(0, 0x10+i) }

// clientAddr6 is client i's IPv6 address on path p (0 or 1).
func clientAddr6(p, i int) netip.Addr { return addr6(1+p, 1+i) }

// routerClientAddr6 is the router's IPv6 address on client path p.
func routerClientAddr6(p int) netip.Addr { return addr6(1+p, 0xfe) }

// checkFamily says what an IPv6 lab cannot do: only the beamer strategy
// forwards IPv6, and the UDP and QUIC services are IPv4 only.
func (o *Options) checkFamily() error {
	switch {
	case o.Family != 0 && o.Family != 4 && o.Family != 6:
		return fmt.Errorf("lab: family %d: want 4 or 6", o.Family)
	case o.Family != 6:
		return nil
	case !forwarding.Strategy(o.Strategy).Spec().IPv6:
		return fmt.Errorf("lab: family 6 needs strategy %s (the ones that forward IPv6), not %q", ipv6Strategies(), o.Strategy)
	case o.Encap == "ipip":
		return fmt.Errorf("lab: family 6 travels in GUE only, not encap ipip")
	case o.UDP || o.QUIC:
		return fmt.Errorf("lab: family 6 runs the TCP load only (the lab's UDP and QUIC services are IPv4)")
	}
	return nil
}

// ipv6Strategies names the strategies that forward IPv6.
func ipv6Strategies() string {
	return forwarding.StrategiesWith(func(s forwarding.StrategySpec) bool { return s.IPv6 })
}

// familyNote names an IPv6 run in its first line.
func familyNote(f int) string {
	if f == 6 {
		return ", IPv6 (GUE over IPv6)"
	}
	return ""
}

// v6 tells whether the lab's service is IPv6.
func (l *Lab) v6() bool { return l.opts.Family == 6 }

// vip is the lab's VIP in its family.
func (l *Lab) vip() netip.Addr {
	if l.v6() {
		return VIP6
	}
	return VIP
}

// dip is server i's address in the service's family: the one the
// controller knows it by, where the muxes send its packets.
func (l *Lab) dip(i int) netip.Addr {
	if l.v6() {
		return serverAddr6(i)
	}
	return serverAddr(i)
}

// muxHop is mux i's next hop as the router's route to the VIP names it.
func (l *Lab) muxHop(i int) netip.Addr {
	if l.v6() {
		return muxAddr6(i)
	}
	return muxAddr(i)
}

// clientSrc is client i's source address on its first path.
func (l *Lab) clientSrc(i int) netip.Addr {
	if l.v6() {
		return clientAddr6(0, i)
	}
	return clientAddr(0, i)
}

// tcp is the network the clients dial and the servers listen on.
func (l *Lab) tcp() string {
	if l.v6() {
		return "tcp6"
	}
	return "tcp4"
}
