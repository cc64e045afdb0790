package lab

import "net/netip"

// Addresses of the lab, all in 198.18.0.0/15 (RFC 2544, reserved for
// benchmarking), so lab traffic can never be mistaken for real traffic.
//
//	198.18.0.0/24    fabric: muxes .1–.9, servers .10–.99, controller(s) .250(–.252), router .254
//	198.18.1.0/24    clients' first path (eth0), router .254
//	198.18.2.0/24    clients' second path (eth1, MPTCP subflows), router .254
//	198.18.100.1     the VIP
//	198.18.128.0/17  spoofed sources of the SYN flood (the router drops replies to them)
var (
	VIP         = netip.MustParseAddr("198.18.100.1")
	LabRange    = netip.MustParsePrefix("198.18.0.0/15")
	SpoofPrefix = netip.MustParsePrefix("198.18.128.0/17")

	fabricNet    = netip.MustParsePrefix("198.18.0.0/24")
	ctlAddr      = netip.MustParseAddr("198.18.0.250")
	routerFabric = netip.MustParseAddr("198.18.0.254")
)

// Limits of the address plan.
const (
	MaxMuxes   = 9
	MaxServers = 90
	MaxClients = 200
	paths      = 2 // client networks, one per MPTCP path
)

// BGP: the border router and the muxes (all muxes share one AS, so the
// router sees equal AS paths and spreads over them).
const (
	routerASN = 65000
	muxASN    = 65001
)

func muxAddr(i int) netip.Addr    { return netip.AddrFrom4([4]byte{198, 18, 0, byte(1 + i)}) }
func serverAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + i)}) }

// clientAddr is client i's address on path p (0 or 1).
func clientAddr(p, i int) netip.Addr {
	return netip.AddrFrom4([4]byte{198, 18, byte(1 + p), byte(1 + i)})
}

// routerClientAddr is the router's address on client path p.
func routerClientAddr(p int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(1 + p), 254}) }

func clientNet(p int) netip.Prefix { return netip.PrefixFrom(routerClientAddr(p), 24).Masked() }

// ServerID is the server id of server i.
func ServerID(i int) int { return 1025 + i }
