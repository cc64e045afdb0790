package muxd

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
)

type nhXDPMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

var nhVIP = netip.MustParseAddr("198.18.100.1")

// nhRun runs one TCP packet to the VIP through the daemon's program and
// returns the XDP action and the frame's destination MAC.
func nhRun(t *testing.T, ns *netlab.Namespace, ifindex int, prog *ebpf.Program) (uint32, net.HardwareAddr) {
	t.Helper()
	s := wiretest.Segment{Flow: wire.Flow{Src: netip.MustParseAddr("198.18.50.7"), Dst: nhVIP, SrcPort: 40000, DstPort: 80},
		Flags: wiretest.ACK, Seq: 1, Ack: 1, IPID: 7, Payload: make([]byte, 20)}
	frame := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, s.IPv4())
	opts := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+256),
		Context: nhXDPMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(ifindex)}}
	var ret uint32
	must(t, ns.Do(func() (err error) {
		ret, err = prog.Run(opts)
		return err
	}))
	return ret, net.HardwareAddr(opts.DataOut[0:6])
}

// nhTable sends every bucket to server id 1025 at addr.
func nhTable(gen uint32, addr netip.Addr) (forwarding.Instance, *forwarding.Table) {
	t := forwarding.NewTable(67)
	t.Generation = gen
	t.Servers[1025] = forwarding.Server{Addr: addr, State: forwarding.Active}
	for i := range t.Buckets {
		t.Buckets[i] = forwarding.Bucket{Current: 1025}
	}
	return forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{nhVIP},
		PortLow: 80, PortHigh: 80, Buckets: 67}, t
}

// waitPublished waits until addr's published next hop satisfies ok and
// returns how long that took.
func waitPublished(t *testing.T, m *dataplane.Mux, addr netip.Addr, what string, ok func(dataplane.ResolvedNextHop, bool) bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		h, published := m.PublishedNextHop(addr)
		if ok(h, published) {
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%s: after 10 s the published next hop of %v is %v (%v)", what, addr, h, published)
		}
		time.Sleep(50 * time.Microsecond) // fine enough to time the reaction
	}
}

// nhPair is the next-hop tests' rig named name: the mux's eth0
// (198.18.0.1/24) and a net side (198.18.0.2) that also answers for the
// server near (198.18.0.10) and is the gateway of far (198.18.9.10); the
// net side's MAC and the mux's eth0 index.
func nhPair(t *testing.T, name string) (ns, peer *netlab.Namespace, near, far netip.Addr, netMAC string, ifindex int) {
	t.Helper()
	ns, peer = netlabtest.NewRig(t, name).Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.2/24"), 0)
	near, far = netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.9.10")
	_, err := peer.Run("ip", "addr", "add", "198.18.0.10/24", "dev", "eth0")
	must(t, err)
	_, err = ns.Run("ip", "route", "add", "198.18.9.0/24", "via", "198.18.0.2")
	must(t, err)
	peerEth0, err := peer.Netlink().LinkByName("eth0")
	must(t, err)
	eth0, err := ns.Netlink().LinkByName("eth0")
	must(t, err)
	return ns, peer, near, far, peerEth0.Attrs().HardwareAddr.String(), eth0.Attrs().Index
}

// TestNextHopFollower: the daemon publishes each server's next hop from the
// kernel's route and neighbour (the gateway's for a server behind one); a
// neighbour's new MAC reaches the entry and the packets; a deleted
// neighbour withdraws it (drop_no_neigh) until it is back; a removed route
// withdraws the entry and the server's packets are dropped as
// drop_no_route; the route back, the entry is published again.
func TestNextHopFollower(t *testing.T) {
	// The net side answers ARP for the server near and the gateway (the
	// daemon makes their neighbour entries managed: resolved by ARP).
	ns, _, near, far, netMAC, ifindex := nhPair(t, "muxnh")
	var d *Daemon
	must(t, ns.Do(func() (err error) {
		d, err = Start(Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, PinDir: "-"})
		if err != nil {
			return err
		}
		cfg, table := nhTable(1, near)
		return d.SetInstance(cfg, table)
	}))
	defer ns.Do(d.Close)
	m := d.Mux()
	macIs := func(mac string) func(dataplane.ResolvedNextHop, bool) bool {
		return func(h dataplane.ResolvedNextHop, ok bool) bool { return ok && h.Dst.String() == mac }
	}

	waitPublished(t, m, near, "first resolution", macIs(netMAC))
	eth0, err := ns.Netlink().LinkByIndex(ifindex)
	must(t, err)
	if h, _ := m.PublishedNextHop(near); h.Ifindex != uint32(ifindex) || h.MTU != 1500 || !bytes.Equal(h.Src, eth0.Attrs().HardwareAddr) {
		t.Errorf("published %v, want dev %d mtu 1500 from %v", h, ifindex, eth0.Attrs().HardwareAddr)
	}
	if ret, dst := nhRun(t, ns, ifindex, m.Program()); ret != 3 || dst.String() != netMAC {
		t.Fatalf("packet: action %d to %v, want XDP_TX to the server's MAC", ret, dst)
	}

	// The server's MAC changes (set by hand): the entry and the packets follow.
	// Timed from before the netlink call (which returns once the kernel
	// has the entry) to the entry seen published.
	start := time.Now()
	must(t, ns.Netlink().NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.IP(near.AsSlice()), Family: netlink.FAMILY_V4,
		HardwareAddr: net.HardwareAddr{2, 0xbe, 0xa0, 0, 1, 0xb}, State: netlink.NUD_PERMANENT}))
	waitPublished(t, m, near, "new MAC", macIs("02:be:a0:00:01:0b"))
	t.Logf("a neighbour's new MAC published %v after the change was asked", time.Since(start))
	if ret, dst := nhRun(t, ns, ifindex, m.Program()); ret != 3 || dst.String() != "02:be:a0:00:01:0b" {
		t.Fatalf("packet after the MAC change: action %d to %v, want XDP_TX to 02:be:a0:00:01:0b", ret, dst)
	}

	// The neighbour gone: withdrawn, the packets dropped as drop_no_neigh;
	// back: published again.
	must(t, ns.Netlink().NeighDel(&netlink.Neigh{LinkIndex: ifindex, IP: net.IP(near.AsSlice()), Family: netlink.FAMILY_V4}))
	waitPublished(t, m, near, "neighbour deleted", func(_ dataplane.ResolvedNextHop, ok bool) bool { return !ok })
	before, err := m.Counters()
	must(t, err)
	if ret, _ := nhRun(t, ns, ifindex, m.Program()); ret != 1 {
		t.Errorf("packet with the neighbour gone: action %d, want XDP_DROP", ret)
	}
	after, err := m.Counters()
	must(t, err)
	if n := after["drop_no_neigh"] - before["drop_no_neigh"]; n != 1 {
		t.Errorf("drop_no_neigh moved by %d, want 1", n)
	}
	must(t, ns.Netlink().NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.IP(near.AsSlice()), Family: netlink.FAMILY_V4,
		HardwareAddr: net.HardwareAddr{2, 0xbe, 0xa0, 0, 1, 0xc}, State: netlink.NUD_PERMANENT}))
	waitPublished(t, m, near, "neighbour back", macIs("02:be:a0:00:01:0c"))

	// A server behind the gateway: its MAC is the gateway's.
	must(t, ns.Do(func() error {
		cfg, table := nhTable(2, far)
		return d.SetInstance(cfg, table)
	}))
	waitPublished(t, m, far, "server behind the gateway", macIs(netMAC))
	if ret, dst := nhRun(t, ns, ifindex, m.Program()); ret != 3 || dst.String() != netMAC {
		t.Fatalf("packet to the server behind the gateway: action %d to %v", ret, dst)
	}

	// Its route removed: withdrawn, its packets dropped as drop_no_route.
	_, dst, _ := net.ParseCIDR("198.18.9.0/24")
	start = time.Now()
	must(t, ns.Netlink().RouteDel(&netlink.Route{LinkIndex: ifindex, Dst: dst, Gw: net.ParseIP("198.18.0.2")}))
	waitPublished(t, m, far, "route removed", func(_ dataplane.ResolvedNextHop, ok bool) bool { return !ok })
	t.Logf("a removed route's server withdrawn %v after the removal was asked", time.Since(start))
	before, err = m.Counters()
	must(t, err)
	if ret, _ := nhRun(t, ns, ifindex, m.Program()); ret != 1 {
		t.Errorf("packet with the route removed: action %d, want XDP_DROP", ret)
	}
	after, err = m.Counters()
	must(t, err)
	if n := after["drop_no_route"] - before["drop_no_route"]; n != 1 {
		t.Errorf("drop_no_route moved by %d, want 1", n)
	}

	// The route back: published again.
	_, err = ns.Run("ip", "route", "add", "198.18.9.0/24", "via", "198.18.0.2")
	must(t, err)
	waitPublished(t, m, far, "route back", macIs(netMAC))
	// The server near is no longer in any table: its entry is gone.
	waitPublished(t, m, near, "server removed", func(_ dataplane.ResolvedNextHop, ok bool) bool { return !ok })
}
