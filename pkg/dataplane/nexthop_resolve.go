package dataplane

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Neighbor names a neighbour entry: the next hop's address on a device.
type Neighbor struct {
	LinkIndex int
	IP        netip.Addr
}

// NextHopLookup resolves next hops as bpf_fib_lookup would answer them,
// from the kernel's routes, neighbours and links (one netlink handle, of
// the mux's namespace). It keeps the neighbour and link tables it listed,
// so that resolving many servers costs two route queries each and one
// listing per device: make a new one for each pass.
type NextHopLookup struct {
	nl     *netlink.Handle
	q      NextHopQuery
	neighs map[neighTable]map[netip.Addr]netlink.Neigh
	links  map[int]netlink.Link
	mtu6   map[int]int          // devices' IPv6 MTUs (nexthop_mtu6.go)
	rules  map[int]*fibQuestion // per family: how to ask the kernel, or why it cannot be
}

// NextHopQuery is what the program asks the FIB with, besides the server:
// the mux's own address as source (MuxOptions.Addr, Addr6), so that
// policy rules matching sources and the kernel's choices that depend on
// it are asked about as the program meets them; and the namespace of the
// netlink handle, for the requests netlink.Handle cannot make (a device's
// IPv6 MTU).
type NextHopQuery struct {
	NS          netns.NsHandle // the handle's namespace; netns.None(): the calling thread's
	Addr, Addr6 netip.Addr     // the mux's addresses; unset: the family is asked without a source
}

// neighTable is one device's neighbours of one family.
type neighTable struct{ link, family int }

// NewNextHopLookup starts a resolution pass.
func NewNextHopLookup(nl *netlink.Handle, q NextHopQuery) *NextHopLookup {
	return &NextHopLookup{nl: nl, q: q, neighs: map[neighTable]map[netip.Addr]netlink.Neigh{}, links: map[int]netlink.Link{},
		mtu6: map[int]int{}, rules: map[int]*fibQuestion{}}
}

// neighValid are the states in which the FIB uses a neighbour's MAC
// (the kernel's NUD_VALID).
const neighValid = netlink.NUD_PERMANENT | netlink.NUD_NOARP | netlink.NUD_REACHABLE | netlink.NUD_PROBE |
	netlink.NUD_STALE | netlink.NUD_DELAY

// NeighborUsable says whether a neighbour entry in this state gives a MAC.
func NeighborUsable(state int, mac net.HardwareAddr) bool {
	return state&neighValid != 0 && len(mac) == 6
}

// Resolve is server a's next hop and the neighbour it depends on, or an
// error saying why there is none yet (no unicast route, neighbour not
// resolved, a device without a MAC) or why the kernel cannot be asked
// the program's question (*LeftToFIBError): the program then asks the FIB.
func (l *NextHopLookup) Resolve(a netip.Addr) (ResolvedNextHop, Neighbor, error) {
	a = a.Unmap()
	if !a.IsValid() {
		return ResolvedNextHop{}, Neighbor{}, fmt.Errorf("no address")
	}
	ask, err := l.question(a.Is4())
	if err != nil {
		return ResolvedNextHop{}, Neighbor{}, err
	}
	routes, err := l.nl.RouteGetWithOptions(net.IP(a.AsSlice()), ask.options(false))
	if err != nil || len(routes) == 0 {
		return ResolvedNextHop{}, Neighbor{}, fmt.Errorf("no route to %v: %v", a, err)
	}
	r := routes[0]
	if r.Type != unix.RTN_UNICAST || r.LinkIndex == 0 {
		return ResolvedNextHop{}, Neighbor{}, fmt.Errorf("route to %v is not unicast (type %d)", a, r.Type)
	}
	// The route the lookup matched, as the FIB holds it: the answer above
	// names one path of a multipath route, which the FIB picks by a hash
	// of the program's packet netlink cannot reproduce.
	fib, err := l.nl.RouteGetWithOptions(net.IP(a.AsSlice()), ask.options(true))
	if err != nil || len(fib) == 0 {
		return ResolvedNextHop{}, Neighbor{}, fmt.Errorf("the route to %v: %v", a, err)
	}
	if len(fib[0].MultiPath) > 1 {
		return ResolvedNextHop{}, Neighbor{}, &LeftToFIBError{Cause: "a multipath route (the FIB picks a path by a hash of each packet)",
			Detail: fmt.Sprintf("%v in table %d", fib[0].Dst, fib[0].Table)}
	}
	if r.Encap != nil || fib[0].Encap != nil {
		// bpf_fib_lookup refuses a route with a lightweight tunnel
		// (BPF_FIB_LKUP_RET_UNSUPP_LWT): the program drops as no route.
		// (This library decodes MPLS, seg6 and BPF encapsulations only:
		// an ip/ip6 one goes unseen.)
		return ResolvedNextHop{}, Neighbor{}, &LeftToFIBError{Cause: "a route with a lightweight tunnel encapsulation (the FIB refuses it)",
			Detail: fmt.Sprintf("%v in table %d: %v", fib[0].Dst, fib[0].Table, fib[0].Encap)}
	}
	hop := a
	if r.Gw != nil {
		g, ok := netip.AddrFromSlice(r.Gw)
		if !ok || g.Unmap().Is4() != a.Is4() {
			return ResolvedNextHop{}, Neighbor{}, fmt.Errorf("route to %v: gateway %v of another family", a, r.Gw)
		}
		hop = g.Unmap()
	}
	n := Neighbor{LinkIndex: r.LinkIndex, IP: hop}
	link, err := l.link(r.LinkIndex)
	if err != nil {
		return ResolvedNextHop{}, n, err
	}
	src := link.Attrs().HardwareAddr
	if len(src) != 6 {
		return ResolvedNextHop{}, n, fmt.Errorf("device %d has no Ethernet address", r.LinkIndex)
	}
	neigh, err := l.neighbor(n)
	if err != nil {
		return ResolvedNextHop{}, n, err
	}
	// The FIB's mtu_result for a forwarded packet: a locked route MTU,
	// else a learned path MTU (an exception, which expires), else the
	// device's — for IPv4 its MTU, for IPv6 its IPv6 MTU (which router
	// advertisements may lower below it). An unlocked MTU in the answer
	// is either an exception or a route metric the FIB may ignore: left
	// to the FIB.
	var mtu int
	switch {
	case r.MTU > 0 && r.MTULock:
		mtu = r.MTU
	case r.MTU > 0:
		return ResolvedNextHop{}, n, fmt.Errorf("route to %v: an unlocked MTU %d (path MTU or route metric): left to the FIB", a, r.MTU)
	case a.Is4():
		mtu = link.Attrs().MTU
	default:
		if mtu, err = l.deviceMTU6(r.LinkIndex); err != nil {
			return ResolvedNextHop{}, n, err
		}
	}
	if mtu <= 0 || mtu > 0xffff {
		return ResolvedNextHop{}, n, fmt.Errorf("device %d: MTU %d", r.LinkIndex, mtu)
	}
	return ResolvedNextHop{Ifindex: uint32(r.LinkIndex), MTU: uint32(mtu), Dst: neigh.HardwareAddr, Src: src}, n, nil
}

func (l *NextHopLookup) link(index int) (netlink.Link, error) {
	if link, ok := l.links[index]; ok {
		return link, nil
	}
	link, err := l.nl.LinkByIndex(index)
	if err != nil {
		return nil, fmt.Errorf("device %d: %w", index, err)
	}
	l.links[index] = link
	return link, nil
}

func (l *NextHopLookup) neighbor(n Neighbor) (netlink.Neigh, error) {
	key := neighTable{n.LinkIndex, netlink.FAMILY_V4}
	if !n.IP.Is4() {
		key.family = netlink.FAMILY_V6
	}
	table, ok := l.neighs[key]
	if !ok {
		list, err := l.nl.NeighList(n.LinkIndex, key.family)
		if err != nil {
			return netlink.Neigh{}, fmt.Errorf("neighbours of device %d: %w", n.LinkIndex, err)
		}
		table = map[netip.Addr]netlink.Neigh{}
		for _, e := range list {
			if a, ok := netip.AddrFromSlice(e.IP); ok {
				table[a.Unmap()] = e
			}
		}
		l.neighs[key] = table
	}
	e, ok := table[n.IP]
	if !ok || !NeighborUsable(e.State, e.HardwareAddr) {
		return netlink.Neigh{}, fmt.Errorf("neighbour %v on device %d not resolved", n.IP, n.LinkIndex)
	}
	return e, nil
}
