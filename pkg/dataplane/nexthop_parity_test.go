package dataplane

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/vishvananda/netlink"
)

// The resolver's answer is the FIB's: what the program sends by when
// nothing is published (bpf_fib_lookup from the mux's address, the
// ingress device as iif) is what it publishes, or it publishes nothing.

// fibAnswer6 is the program's cached FIB answer for an IPv6 server on
// CPU 0 (runXDP runs there).
func fibAnswer6(t *testing.T, m *Mux, server netip.Addr) (muxNexthop6, bool) {
	t.Helper()
	var perCPU []muxNexthop6
	must(t, m.objs.Nexthop6Cache.Lookup(addrLine(foldHost(server), 10), &perCPU))
	if len(perCPU) == 0 || netip.AddrFrom16(perCPU[0].Daddr.In6U.U6Addr8) != server {
		return muxNexthop6{}, false
	}
	return perCPU[0], true
}

// TestNextHopMTU6: an IPv6 server's MTU is the device's IPv6 MTU (here
// set below its link MTU, as a router advertisement may), as
// bpf_fib_lookup answers; a locked route MTU still wins.
func TestNextHopMTU6(t *testing.T) {
	m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
	must(t, b.ns.Sysctl("net.ipv6.conf.eth0.mtu", "1380"))
	server := mux6Server[1025]

	// The FIB's answer: nothing published, the cache empty.
	f0 := flow6To(6, 80, 0) // bucket 0: server 1025
	frame := pkt6{src: f0.Src, dst: f0.Dst, proto: 6, sport: f0.SrcPort, dport: f0.DstPort, flags: 0x10}.frame()
	m.FlushNextHops()
	if action, _ := runXDP(t, b.ns, b.ifindex, m.Program(), frame); action != "tx" {
		t.Fatalf("packet: %s, want tx", action)
	}
	fib, ok := fibAnswer6(t, m, server)
	if !ok {
		t.Fatal("no FIB answer cached for the server")
	}
	if fib.Mtu != 1380 {
		t.Errorf("bpf_fib_lookup answered MTU %d, want the device's IPv6 MTU 1380", fib.Mtu)
	}

	lookup := lookupIn(b.ns, m)
	h, _, err := lookup.Resolve(server)
	must(t, err)
	if h.MTU != fib.Mtu || h.Ifindex != fib.Ifindex {
		t.Errorf("resolved %v, the FIB answers dev %d mtu %d", h, fib.Ifindex, fib.Mtu)
	}
	if h, _, err := lookup.Resolve(mux6Server[1030]); err != nil || h.MTU != 1400 {
		t.Errorf("server behind the locked route: %v %v, want MTU 1400", h, err)
	}
}

// TestNextHopPolicyRule: a rule sending the mux's packets (from its
// address) to another table is followed as the FIB follows it; a rule
// matching the incoming device, which a netlink query cannot ask about as
// the program's lookup meets it, leaves the servers to the FIB.
func TestNextHopPolicyRule(t *testing.T) {
	ns, ifindex, m := tooBigNet(t)
	nl := ns.Netlink()
	server := netip.MustParseAddr("198.18.0.10")
	viaRule := net.HardwareAddr{2, 0xbe, 0xa0, 0, 3, 3}
	must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.ParseIP("198.18.0.3"), Family: netlink.FAMILY_V4,
		HardwareAddr: viaRule, State: netlink.NUD_PERMANENT}))
	_, err := ns.Run("ip", "route", "add", "198.18.0.10/32", "via", "198.18.0.3", "dev", "eth0", "table", "100")
	must(t, err)
	frame := tooBigFrame(100, 80, true)
	fibSends := func(name string, want net.HardwareAddr) {
		t.Helper()
		m.FlushNextHops()
		action, out := runXDP(t, ns, ifindex, m.Program(), frame)
		if action != "tx" || !bytes.Equal(out[0:6], want) {
			t.Fatalf("%s: the FIB's answer: %s to %v, want tx to %v", name, action, net.HardwareAddr(out[0:6]), want)
		}
	}

	_, err = ns.Run("ip", "rule", "add", "from", "198.18.0.1", "table", "100", "pref", "100")
	must(t, err)
	fibSends("from the mux's address", viaRule)
	h, via, err := lookupIn(ns, m).Resolve(server)
	must(t, err)
	if !bytes.Equal(h.Dst, viaRule) || via.IP != netip.MustParseAddr("198.18.0.3") {
		t.Errorf("resolved %v via %v, want the rule's route by 198.18.0.3 (%v)", h, via, viaRule)
	}

	_, err = ns.Run("ip", "rule", "del", "pref", "100")
	must(t, err)
	_, err = ns.Run("ip", "rule", "add", "iif", "eth0", "table", "100", "pref", "100")
	must(t, err)
	fibSends("a rule on the ingress device", viaRule)
	h, _, err = lookupIn(ns, m).Resolve(server)
	var left *LeftToFIBError
	if !errors.As(err, &left) {
		t.Errorf("with a rule on the incoming device: resolved %v (%v), want it left to the FIB", h, err)
	}
}

// TestNextHopMultipath: a server behind a multipath route is left to the
// FIB, which picks a path per packet's hash.
func TestNextHopMultipath(t *testing.T) {
	ns, ifindex, m := tooBigNet(t)
	nl := ns.Netlink()
	for i, gw := range []string{"198.18.0.2", "198.18.0.3"} {
		must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.ParseIP(gw), Family: netlink.FAMILY_V4,
			HardwareAddr: net.HardwareAddr{2, 0xbe, 0xa0, 0, 4, byte(i)}, State: netlink.NUD_PERMANENT}))
	}
	_, err := ns.Run("ip", "route", "add", "198.18.9.0/24", "nexthop", "via", "198.18.0.2", "dev", "eth0",
		"nexthop", "via", "198.18.0.3", "dev", "eth0")
	must(t, err)
	h, _, err := lookupIn(ns, m).Resolve(netip.MustParseAddr("198.18.9.10"))
	var left *LeftToFIBError
	if !errors.As(err, &left) {
		t.Errorf("behind a multipath route: resolved %v (%v), want it left to the FIB", h, err)
	}
	// The server on the link is still resolved.
	if _, _, err := lookupIn(ns, m).Resolve(netip.MustParseAddr("198.18.0.10")); err != nil {
		t.Errorf("the server on the link: %v", err)
	}
}

// TestNextHopMultipath6: the same for an IPv6 server.
func TestNextHopMultipath6(t *testing.T) {
	m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
	// Both gateways' neighbours known (::2's by newMux6Bench).
	must(t, b.ns.Netlink().NeighSet(&netlink.Neigh{LinkIndex: b.ifindex, IP: net.ParseIP("2001:db8::3"), Family: netlink.FAMILY_V6,
		HardwareAddr: net.HardwareAddr{2, 0xbe, 0xa0, 0, 4, 3}, State: netlink.NUD_PERMANENT}))
	_, err := b.ns.Run("ip", "-6", "route", "add", "2001:db8:2::/64", "nexthop", "via", "2001:db8::2", "dev", "eth0",
		"nexthop", "via", "2001:db8::3", "dev", "eth0")
	must(t, err)
	h, _, err := lookupIn(b.ns, m).Resolve(netip.MustParseAddr("2001:db8:2::10"))
	var left *LeftToFIBError
	if !errors.As(err, &left) {
		t.Errorf("behind a multipath route: resolved %v (%v), want it left to the FIB", h, err)
	}
}

// TestNextHopSourceNotLocal: a mux address the namespace does not hold
// cannot be a netlink query's IPv4 source: servers are resolved without
// one, unless a rule matches sources (then left to the FIB).
func TestNextHopSourceNotLocal(t *testing.T) {
	ns, _, _ := tooBigNet(t)
	q := NextHopQuery{NS: ns.Handle(), Addr: netip.MustParseAddr("198.18.5.5")}
	server := netip.MustParseAddr("198.18.0.10")
	if _, _, err := NewNextHopLookup(ns.Netlink(), q).Resolve(server); err != nil {
		t.Errorf("from an address not held: %v", err)
	}
	_, err := ns.Run("ip", "rule", "add", "from", "198.18.5.5", "table", "100", "pref", "100")
	must(t, err)
	h, _, err := NewNextHopLookup(ns.Netlink(), q).Resolve(server)
	var left *LeftToFIBError
	if !errors.As(err, &left) {
		t.Errorf("with a rule on sources: resolved %v (%v), want it left to the FIB", h, err)
	}
}

// TestNextHopTunnelRoute: a route with a lightweight tunnel encapsulation,
// which bpf_fib_lookup refuses (the program drops as no route), is left to
// the FIB, not published as if it were a plain route.
func TestNextHopTunnelRoute(t *testing.T) {
	ns, ifindex, m := tooBigNet(t)
	far := netip.MustParseAddr("198.18.9.10")
	must(t, ns.Netlink().NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.IP(far.AsSlice()), Family: netlink.FAMILY_V4,
		HardwareAddr: net.HardwareAddr{2, 0xbe, 0xa0, 0, 5, 5}, State: netlink.NUD_PERMANENT}))
	_, err := ns.Run("ip", "route", "add", "198.18.9.0/24", "encap", "seg6", "mode", "encap", "segs", "2001:db8::5", "dev", "eth0")
	must(t, err)
	h, _, err := lookupIn(ns, m).Resolve(far)
	var left *LeftToFIBError
	if !errors.As(err, &left) {
		t.Errorf("behind a seg6 route: resolved %v (%v), want it left to the FIB", h, err)
	}
}
