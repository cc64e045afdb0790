package dataplane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// EnsureNeighbors creates a managed neighbour entry for the next hop towards
// each server. The XDP program finds next-hop MACs with bpf_fib_lookup, which
// only reads the neighbour table: it neither resolves a missing entry nor
// keeps a used one fresh. Managed entries (Linux 5.16+) are resolved and
// refreshed by the kernel itself, so the table is ready before traffic needs
// it. nl is the netlink handle of the mux's namespace.
func EnsureNeighbors(nl *netlink.Handle, servers []netip.Addr) error {
	var errs []error
	done := map[string]bool{}
	for _, s := range servers {
		routes, err := nl.RouteGet(net.IP(s.AsSlice()))
		if err != nil || len(routes) == 0 {
			errs = append(errs, fmt.Errorf("no route to server %v: %v", s, err))
			continue
		}
		r := routes[0]
		if r.Type == unix.RTN_LOCAL {
			// The controller cannot know the muxes' addresses, so a DIP
			// that is this mux is caught here: reported like a server with
			// no route (its buckets are dropped and counted, never looped
			// back into this mux), not an error of the whole table.
			errs = append(errs, fmt.Errorf("server %v is an address of this mux", s))
			continue
		}
		hop := net.IP(s.AsSlice())
		if r.Gw != nil {
			hop = r.Gw
		}
		key := fmt.Sprintf("%d/%s", r.LinkIndex, hop)
		if done[key] || r.LinkIndex == 0 {
			continue
		}
		done[key] = true
		n := &netlink.Neigh{LinkIndex: r.LinkIndex, Family: neighFamily(hop), IP: hop,
			State: netlink.NUD_NONE, FlagsExt: netlink.NTF_EXT_MANAGED}
		err = nl.NeighAdd(n)
		if errors.Is(err, syscall.EEXIST) && !keptFresh(nl, r.LinkIndex, hop) {
			// A dynamic entry learned earlier would go stale unseen by
			// the kernel (XDP lookups do not confirm it): make it managed.
			err = nl.NeighSet(n)
		} else if errors.Is(err, syscall.EEXIST) {
			err = nil
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("managed neighbour %v for server %v: %w", hop, s, err))
		}
	}
	return errors.Join(errs...)
}

func isManaged(nl *netlink.Handle, link int, ip net.IP) bool {
	n := neighbour(nl, link, ip)
	return n != nil && n.FlagsExt&netlink.NTF_EXT_MANAGED != 0
}

// keptFresh says whether the entry for ip needs no managing: managed
// already, or static (an operator's permanent or no-ARP entry, which never
// goes stale and must not be replaced by one the kernel resolves).
func keptFresh(nl *netlink.Handle, link int, ip net.IP) bool {
	n := neighbour(nl, link, ip)
	return n != nil && (n.FlagsExt&netlink.NTF_EXT_MANAGED != 0 || n.State&(netlink.NUD_PERMANENT|netlink.NUD_NOARP) != 0)
}

// neighbour is link's entry for ip, nil when there is none (or the table
// could not be read).
func neighbour(nl *netlink.Handle, link int, ip net.IP) *netlink.Neigh {
	list, err := nl.NeighList(link, neighFamily(ip))
	if err != nil {
		return nil
	}
	for i := range list {
		if list[i].IP.Equal(ip) {
			return &list[i]
		}
	}
	return nil
}

// neighFamily is the neighbour table of a next hop: IPv6 servers' next hops
// are IPv6 neighbours (NDP), everyone else's IPv4 (ARP).
func neighFamily(ip net.IP) int {
	if ip.To4() == nil {
		return netlink.FAMILY_V6
	}
	return netlink.FAMILY_V4
}
