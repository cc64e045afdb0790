package dataplane

import (
	"bytes"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/vishvananda/netlink"
)

// TestPublishedNextHop: the daemon's published next hop is what packets
// are sent by — a MAC the kernel does not have proves it — and a new one
// reaches the packets; withdrawn, the FIB answers again; a server whose
// route is removed cannot be resolved and, withdrawn, is dropped as
// drop_no_route.
func TestPublishedNextHop(t *testing.T) {
	ns, ifindex, m := tooBigNet(t)
	nl := ns.Netlink()
	eth0, err := nl.LinkByIndex(ifindex)
	must(t, err)
	own := eth0.Attrs().HardwareAddr
	server := netip.MustParseAddr("198.18.0.10")
	kernelMAC := net.HardwareAddr{2, 0xbe, 0xa0, 0, 1, 0} // tooBigNet's neighbour
	frame := tooBigFrame(100, 80, true)
	send := func(name, wantAction string, wantDst net.HardwareAddr) {
		t.Helper()
		action, out := runXDP(t, ns, ifindex, m.Program(), frame)
		if action != wantAction {
			t.Fatalf("%s: action %s, want %s", name, action, wantAction)
		}
		if wantDst != nil && (!bytes.Equal(out[0:6], wantDst) || !bytes.Equal(out[6:12], own)) {
			t.Errorf("%s: sent %v → %v, want %v → %v", name, net.HardwareAddr(out[6:12]), net.HardwareAddr(out[0:6]), own, wantDst)
		}
	}

	h, via, err := lookupIn(ns, m).Resolve(server)
	must(t, err)
	if h.Ifindex != uint32(ifindex) || h.MTU != 1500 || !bytes.Equal(h.Dst, kernelMAC) || !bytes.Equal(h.Src, own) {
		t.Fatalf("resolved %v, want dev %d mtu 1500 %v → %v", h, ifindex, own, kernelMAC)
	}
	if via != (Neighbor{LinkIndex: ifindex, IP: server}) {
		t.Errorf("resolved via %v, want the server itself on eth0", via)
	}
	send("nothing published: the FIB", "tx", kernelMAC)

	published := net.HardwareAddr{2, 0x99, 0, 0, 0, 1}
	h.Dst = published
	must(t, m.PublishNextHop(server, h))
	send("published", "tx", published)
	if got, ok := m.PublishedNextHop(server); !ok || !bytes.Equal(got.Dst, published) || got.MTU != 1500 {
		t.Errorf("PublishedNextHop = %v %v", got, ok)
	}

	// The server's MAC changes in the kernel: resolved and published again.
	moved := net.HardwareAddr{2, 0xbe, 0xa0, 0, 9, 9}
	must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.IP(server.AsSlice()), Family: netlink.FAMILY_V4,
		HardwareAddr: moved, State: netlink.NUD_PERMANENT}))
	h, _, err = lookupIn(ns, m).Resolve(server)
	must(t, err)
	must(t, m.PublishNextHop(server, h))
	send("republished with the new MAC", "tx", moved)

	// Withdrawn: the FIB (its cache flushed) answers with the kernel's MAC.
	h.Dst = published
	must(t, m.PublishNextHop(server, h))
	m.WithdrawNextHop(server)
	m.FlushNextHops()
	send("withdrawn", "tx", moved)

	// A server behind a gateway; its route removed.
	far := netip.MustParseAddr("198.18.9.10")
	gw := net.HardwareAddr{2, 0xbe, 0xa0, 0, 7, 7}
	must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.ParseIP("198.18.0.2"), Family: netlink.FAMILY_V4,
		HardwareAddr: gw, State: netlink.NUD_PERMANENT}))
	_, dst, _ := net.ParseCIDR("198.18.9.0/24")
	route := &netlink.Route{LinkIndex: ifindex, Dst: dst, Gw: net.ParseIP("198.18.0.2")}
	must(t, nl.RouteAdd(route))
	setWeb(t, m, 3, forwarding.EncapIPIP, far)
	h, via, err = lookupIn(ns, m).Resolve(far)
	must(t, err)
	if !bytes.Equal(h.Dst, gw) || via.IP != netip.MustParseAddr("198.18.0.2") {
		t.Fatalf("resolved %v via %v, want the gateway's MAC %v", h, via, gw)
	}
	must(t, m.PublishNextHop(far, h))
	send("behind the gateway", "tx", gw)
	must(t, nl.RouteDel(route))
	if _, _, err := lookupIn(ns, m).Resolve(far); err == nil {
		t.Fatal("resolved a server whose route is gone")
	}
	m.WithdrawNextHop(far)
	m.FlushNextHops()
	before, err := m.Counters()
	must(t, err)
	send("route removed", "drop", nil)
	after, err := m.Counters()
	must(t, err)
	if d := after["drop_no_route"] - before["drop_no_route"]; d != 1 {
		t.Errorf("drop_no_route moved by %d, want 1", d)
	}

	// Retired (the daemon halts, its program forwarding on): nothing is
	// published any more, and the FIB answers.
	must(t, nl.RouteAdd(route))
	h.Dst = published
	must(t, m.PublishNextHop(far, h))
	m.RetireNextHops()
	must(t, m.PublishNextHop(far, h))
	if _, ok := m.PublishedNextHop(far); ok {
		t.Error("a next hop published after RetireNextHops")
	}
	m.FlushNextHops()
	send("retired", "tx", gw)
}

// lookupIn starts a resolution pass in ns, asking from m's addresses as
// the daemon does.
func lookupIn(ns *netlab.Namespace, m *Mux) *NextHopLookup {
	addr, addr6 := m.Addrs()
	return NewNextHopLookup(ns.Netlink(), NextHopQuery{NS: ns.Handle(), Addr: addr, Addr6: addr6})
}

// TestPublishedNextHopNeverTorn: while the daemon rewrites a server's
// entry between two next hops as fast as it can, every packet leaves with
// one of them whole (or the FIB's), never one's destination MAC with the
// other's source MAC — for both families' entries.
func TestPublishedNextHopNeverTorn(t *testing.T) {
	t.Run("ipv4", func(t *testing.T) {
		ns, ifindex, m := tooBigNet(t)
		eth0, err := ns.Netlink().LinkByIndex(ifindex)
		must(t, err)
		fib := ResolvedNextHop{Dst: net.HardwareAddr{2, 0xbe, 0xa0, 0, 1, 0}, Src: eth0.Attrs().HardwareAddr}
		checkNeverTorn(t, m, netip.MustParseAddr("198.18.0.10"), fib, tooBigFrame(100, 80, true), func(frame []byte) (string, []byte) {
			return runXDP(t, ns, ifindex, m.Program(), frame)
		}, ifindex)
	})
	t.Run("ipv6", func(t *testing.T) {
		m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
		dst, _ := net.ParseMAC(mux6MAC[1025])
		fib := ResolvedNextHop{Dst: dst, Src: net.HardwareAddr{2, 0xbe, 0xa0, 0, 0, 2}}
		f0 := flow6To(6, 80, 0) // bucket 0: server 1025
		frame := pkt6{src: f0.Src, dst: f0.Dst, proto: 6, sport: f0.SrcPort, dport: f0.DstPort, flags: 0x10}.frame()
		checkNeverTorn(t, m, mux6Server[1025], fib, frame, func(frame []byte) (string, []byte) {
			return runXDP(t, b.ns, b.ifindex, m.Program(), frame)
		}, b.ifindex)
	})
}

func checkNeverTorn(t *testing.T, m *Mux, server netip.Addr, fib ResolvedNextHop, frame []byte, run func([]byte) (string, []byte), ifindex int) {
	a := ResolvedNextHop{Ifindex: uint32(ifindex), MTU: 1500, Dst: net.HardwareAddr{2, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa},
		Src: net.HardwareAddr{2, 0xa1, 0xa1, 0xa1, 0xa1, 0xa1}}
	b := ResolvedNextHop{Ifindex: uint32(ifindex), MTU: 1500, Dst: net.HardwareAddr{2, 0xbb, 0xbb, 0xbb, 0xbb, 0xbb},
		Src: net.HardwareAddr{2, 0xb1, 0xb1, 0xb1, 0xb1, 0xb1}}
	must(t, m.PublishNextHop(server, a))

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50_000_000 && !stop.Load(); i++ {
			h := a
			if i%2 == 1 {
				h = b
			}
			if err := m.PublishNextHop(server, h); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() {
		stop.Store(true)
		wg.Wait()
	}()
	const packets = 20000
	seen := map[string]int{}
	for i := 0; i < packets; i++ {
		action, out := run(frame)
		if action != "tx" {
			t.Fatalf("packet %d: action %s", i, action)
		}
		dst, src := net.HardwareAddr(out[0:6]), net.HardwareAddr(out[6:12])
		switch {
		case bytes.Equal(dst, a.Dst) && bytes.Equal(src, a.Src):
			seen["a"]++
		case bytes.Equal(dst, b.Dst) && bytes.Equal(src, b.Src):
			seen["b"]++
		case bytes.Equal(dst, fib.Dst) && bytes.Equal(src, fib.Src):
			seen["fib"]++
		default:
			t.Fatalf("packet %d sent %v → %v: a torn next hop", i, src, dst)
		}
	}
	t.Logf("of %d packets: %v", packets, seen)
	if seen["a"]+seen["b"] == 0 {
		t.Errorf("no packet took the published next hop: %v", seen)
	}
}

// TestPublishedNextHop6: IPv6 servers' next hops are resolved (the
// gateway's MAC and the locked route MTU for a server behind it; none for
// a server without neighbour or route) and, published, are what packets
// are sent by; withdrawn, the FIB answers again.
func TestPublishedNextHop6(t *testing.T) {
	m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
	lookup := lookupIn(b.ns, m)
	for id, a := range mux6Server {
		h, _, err := lookup.Resolve(a)
		switch id {
		case 1028, 1029: // no neighbour, no route
			if err == nil {
				t.Errorf("server %d (%v) resolved: %v", id, a, h)
			}
			continue
		case 1030:
			if err != nil || h.Dst.String() != "02:be:a0:00:01:99" || h.MTU != 1400 {
				t.Errorf("server behind the gateway: %v %v, want the gateway's MAC and MTU 1400", h, err)
			}
		default:
			if err != nil || h.Dst.String() != mux6MAC[id] || h.Ifindex != uint32(b.ifindex) {
				t.Errorf("server %d: %v %v, want %s on device %d", id, h, err, mux6MAC[id], b.ifindex)
			}
		}
		if err == nil {
			must(t, m.PublishNextHop(a, h))
		}
	}
	f0 := flow6To(6, 80, 0) // bucket 0: server 1025
	frame := pkt6{src: f0.Src, dst: f0.Dst, proto: 6, sport: f0.SrcPort, dport: f0.DstPort, flags: 0x10}.frame()
	send := func(name, want string) {
		t.Helper()
		action, out := runXDP(t, b.ns, b.ifindex, m.Program(), frame)
		if action != "tx" || net.HardwareAddr(out[0:6]).String() != want {
			t.Errorf("%s: %s to %v, want tx to %s", name, action, net.HardwareAddr(out[0:6]), want)
		}
	}
	send("published", mux6MAC[1025])
	h, ok := m.PublishedNextHop(mux6Server[1025])
	if !ok {
		t.Fatal("server 1025 not published")
	}
	h.Dst = net.HardwareAddr{2, 0x99, 0, 0, 0, 6}
	must(t, m.PublishNextHop(mux6Server[1025], h))
	send("published, a MAC the kernel does not have", "02:99:00:00:00:06")
	m.WithdrawNextHop(mux6Server[1025])
	m.FlushNextHops()
	send("withdrawn", mux6MAC[1025])
}
