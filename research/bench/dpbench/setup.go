package dpbench

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/vishvananda/netlink"
)

// The bench network: the mux's eth0 on 198.18.0.0/24 with a static neighbour
// for each server, so route lookups succeed as on a real mux.
var (
	muxAddr   = netip.MustParseAddr("198.18.0.1")
	beamerVIP = netip.MustParseAddr("198.18.100.1")
	maglevVIP = netip.MustParseAddr("198.18.100.2")
)

const servers = 16

func serverAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + i)}) }

type rig struct {
	lab     *netlab.Lab
	ns      *netlab.Namespace
	ifindex int
}

func newRig() (*rig, error) {
	lab, err := netlab.New("bench")
	if err != nil {
		return nil, err
	}
	r := &rig{lab: lab}
	if err := r.build(); err != nil {
		lab.Close()
		return nil, err
	}
	return r, nil
}

func (r *rig) build() error {
	ns, err := r.lab.Namespace("mux")
	if err != nil {
		return err
	}
	peer, err := r.lab.Namespace("net")
	if err != nil {
		return err
	}
	if err := r.lab.Veth(ns, "eth0", netip.PrefixFrom(muxAddr, 24), peer, "eth0", netip.MustParsePrefix("198.18.0.2/24"), 0); err != nil {
		return err
	}
	if err := ns.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		return err
	}
	nl := ns.Netlink()
	eth0, err := nl.LinkByName("eth0")
	if err != nil {
		return err
	}
	for i := 0; i < servers; i++ {
		mac := net.HardwareAddr{0x02, 0xbe, 0xa0, 0x00, 0x02, byte(i)}
		if err := nl.NeighSet(&netlink.Neigh{LinkIndex: eth0.Attrs().Index, IP: net.IP(serverAddr(i).AsSlice()), HardwareAddr: mac,
			State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V4}); err != nil {
			return fmt.Errorf("neighbour: %w", err)
		}
	}
	r.ns, r.ifindex = ns, eth0.Attrs().Index
	return nil
}

func (r *rig) close() { r.lab.Close() }

func serverSet() (map[forwarding.ServerID]forwarding.Server, []assign.Server) {
	table := map[forwarding.ServerID]forwarding.Server{}
	var backends []assign.Server
	for i := 0; i < servers; i++ {
		id := forwarding.ServerID(1025 + i)
		table[id] = forwarding.Server{Addr: serverAddr(i), State: forwarding.Active}
		backends = append(backends, assign.Server{ID: id, Weight: 1})
	}
	return table, backends
}

// beamerInstance is a Beamer VIP with b buckets over the servers, every
// bucket with a history of `moved` previous owners (0: no bucket ever moved,
// the fast path; 1: as after one move; more: a bucket moved that many times
// within the window).
func beamerInstance(b uint32, moved int) (forwarding.Instance, *forwarding.Table) {
	return beamerInstanceLaid(b, moved, false)
}

// beamerInstanceLaid is beamerInstance with the buckets in the
// controller's contiguous ranges, or scattered: dealt to the servers in
// turn, as in a table never defragmented, so that no block of buckets is
// one server's (bpf/include/mux_maps.h, block summaries).
func beamerInstanceLaid(b uint32, moved int, scattered bool) (forwarding.Instance, *forwarding.Table) {
	t := forwarding.NewTable(int(b))
	var backends []assign.Server
	t.Servers, backends = serverSet()
	for _, c := range assign.Rebalance(t.Buckets, backends, 0) {
		t.Buckets[c.Index] = forwarding.Bucket{Current: c.Bucket.Current}
	}
	if scattered {
		for i := range t.Buckets {
			t.Buckets[i].Current = 1025 + forwarding.ServerID(i%servers)
		}
	}
	for i := range t.Buckets {
		n := 0
		for k := 1; n < moved && k < servers; k++ {
			prev := 1025 + (forwarding.ServerID(i)+forwarding.ServerID(k))%servers
			if prev != t.Buckets[i].Current {
				t.Buckets[i].History[n] = prev
				n++
			}
		}
		if n > 0 {
			t.Buckets[i].Changed = 1763700000
		}
	}
	t.Generation = 1
	return forwarding.Instance{Name: "beamer", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{beamerVIP},
		PortLow: 80, PortHigh: 80, Buckets: b, ChainWindow: forwarding.DefaultChainWindow}, t
}

// maglevInstance is a Maglev VIP with the paper's 65537-entry table.
func maglevInstance() (forwarding.Instance, *forwarding.Table, error) {
	const size = 65537
	t := forwarding.NewTable(size)
	var backends []assign.Server
	t.Servers, backends = serverSet()
	entries, err := assign.MaglevTable(backends, size)
	if err != nil {
		return forwarding.Instance{}, nil, err
	}
	for i, id := range entries {
		t.Buckets[i] = forwarding.Bucket{Current: id}
	}
	t.Generation = 1
	return forwarding.Instance{Name: "maglev", Strategy: forwarding.StrategyMaglev, VIPs: []netip.Addr{maglevVIP},
		PortLow: 80, PortHigh: 80, Buckets: size}, t, nil
}

// loadMux loads the benchmark build of the mux with one instance (and the
// baseline object of o on its maps, if any).
func loadMux(cfg forwarding.Instance, t *forwarding.Table, ctEntries int, o Options) (*benchMux, error) {
	return loadMuxCT(cfg, t, ctEntries, 0, o)
}

// loadMuxCT is loadMux with the size of the Maglev rows' reference
// connection table (the LRU hash) apart from the connection table's; the
// reference table is installed only when lruEntries is set.
func loadMuxCT(cfg forwarding.Instance, t *forwarding.Table, ctEntries, lruEntries int, o Options) (*benchMux, error) {
	b, err := loadBenchMux(dataplane.MuxOptions{Addr: muxAddr, Addr6: mux6Addr, ConnTrackEntries: ctEntries}, lruEntries)
	if err != nil {
		return nil, err
	}
	if err := b.SetInstance(cfg, t); err != nil {
		b.Close()
		return nil, err
	}
	if err := publishNextHops(b, cfg.Name, o.ns); err != nil {
		b.Close()
		return nil, err
	}
	// For scripts/mux-stages.sh's measuring build that reads the table
	// without a helper call (bpf/bench/scratch.h).
	if err := b.copyBucketsToScratch(); err != nil {
		b.Close()
		return nil, err
	}
	if o.Baseline != nil {
		if b.base, err = b.loadBaseline(o.Baseline); err != nil {
			b.Close()
			return nil, err
		}
	}
	return b, nil
}

// publishNextHops publishes the next hop of each server of the instance, resolved from the bench namespace as the daemon resolves them
// (pkg/node/muxd nexthops.go), so the rows take the path of a mux whose
// daemon follows its routes and neighbours. ns nil: none published.
func publishNextHops(b *benchMux, instance string, ns *netlab.Namespace) error {
	if ns == nil {
		return nil
	}
	addr, addr6 := b.Addrs()
	lookup := dataplane.NewNextHopLookup(ns.Netlink(), dataplane.NextHopQuery{NS: ns.Handle(), Addr: addr, Addr6: addr6})
	for _, a := range b.ServerAddrs(instance) {
		h, _, err := lookup.Resolve(a)
		if err != nil {
			return fmt.Errorf("next hop of server %v: %w", a, err)
		}
		if err := b.PublishNextHop(a, h); err != nil {
			return fmt.Errorf("next hop of server %v: %w", a, err)
		}
	}
	return nil
}
