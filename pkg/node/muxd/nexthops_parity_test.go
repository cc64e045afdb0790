package muxd

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// nhServers sends the buckets to the servers at addrs (ids from 1025),
// round robin.
func nhServers(gen uint32, addrs ...netip.Addr) (forwarding.Instance, *forwarding.Table) {
	cfg, t := nhTable(gen, addrs[0])
	for i, a := range addrs {
		t.Servers[forwarding.ServerID(1025+i)] = forwarding.Server{Addr: a, State: forwarding.Active}
	}
	for i := range t.Buckets {
		t.Buckets[i] = forwarding.Bucket{Current: forwarding.ServerID(1025 + i%len(addrs))}
	}
	return cfg, t
}

// nhDaemon starts a daemon in ns on eth0 logging into logs, with the
// servers at addrs.
func nhDaemon(t *testing.T, ns *netlab.Namespace, logs *syncLog, addrs ...netip.Addr) *Daemon {
	t.Helper()
	var d *Daemon
	must(t, ns.Do(func() (err error) {
		d, err = Start(Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, PinDir: "-", Log: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			return err
		}
		cfg, table := nhServers(1, addrs...)
		return d.SetInstance(cfg, table)
	}))
	t.Cleanup(func() {
		ns.Do(d.Close)
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", logs.String())
		}
	})
	return d
}

func macIs(mac string) func(dataplane.ResolvedNextHop, bool) bool {
	return func(h dataplane.ResolvedNextHop, ok bool) bool { return ok && h.Dst.String() == mac }
}

// TestNextHopFollowerPolicy: the daemon resolves as its program's FIB
// lookups meet the kernel — from the mux's address, so a rule sending the
// mux's packets to another table gives the published entry that table's
// route, and the rule's removal and return are followed; a server behind a multipath route (the FIB hashes each packet to
// a path) is left to the FIB, logged once however many passes.
func TestNextHopFollowerPolicy(t *testing.T) {
	ns, peer := netlabtest.NewRig(t, "muxnhpol").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.2/24"), 0)
	near, far, third := netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.9.10"), netip.MustParseAddr("198.18.0.12")
	_, err := peer.Run("ip", "addr", "add", "198.18.0.10/24", "dev", "eth0")
	must(t, err)
	eth0, err := ns.Netlink().LinkByName("eth0")
	must(t, err)
	ifindex := eth0.Attrs().Index
	const viaRule = "02:be:a0:00:03:03"
	for ip, mac := range map[string]string{"198.18.0.3": viaRule, "198.18.0.4": "02:be:a0:00:03:04", "198.18.0.12": "02:be:a0:00:03:12"} {
		hw, _ := net.ParseMAC(mac)
		must(t, ns.Netlink().NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.ParseIP(ip), Family: netlink.FAMILY_V4,
			HardwareAddr: hw, State: netlink.NUD_PERMANENT}))
	}
	for _, cmd := range [][]string{
		{"ip", "route", "add", "198.18.0.10/32", "via", "198.18.0.3", "dev", "eth0", "table", "100"},
		{"ip", "rule", "add", "from", "198.18.0.1", "table", "100", "pref", "100"},
		{"ip", "route", "add", "198.18.9.0/24", "nexthop", "via", "198.18.0.3", "dev", "eth0", "nexthop", "via", "198.18.0.4", "dev", "eth0"},
	} {
		_, err := ns.Run(cmd[0], cmd[1:]...)
		must(t, err)
	}
	var logs syncLog
	d := nhDaemon(t, ns, &logs, near, far)
	m := d.Mux()

	waitPublished(t, m, near, "the rule's route", macIs(viaRule))
	if h, _ := m.PublishedNextHop(near); h.Ifindex != uint32(ifindex) {
		t.Errorf("published %v, want device %d", h, ifindex)
	}
	// The rule removed, then back: followed (rules have no routes' events).
	peerEth0, err := peer.Netlink().LinkByName("eth0")
	must(t, err)
	_, err = ns.Run("ip", "rule", "del", "pref", "100")
	must(t, err)
	waitPublished(t, m, near, "the rule removed: the main table's route", macIs(peerEth0.Attrs().HardwareAddr.String()))
	_, err = ns.Run("ip", "rule", "add", "from", "198.18.0.1", "table", "100", "pref", "100")
	must(t, err)
	waitPublished(t, m, near, "the rule back", macIs(viaRule))

	const multipath = `cause="a multipath route`
	waitUntil(t, "the multipath route logged", 10*time.Second, func() bool { return strings.Contains(logs.String(), multipath) })
	if h, ok := m.PublishedNextHop(far); ok {
		t.Errorf("the server behind the multipath route published: %v", h)
	}

	// More passes (the daemon asks on every generation, a new server
	// waits for one): the multipath route is not logged again.
	for gen := uint32(2); gen <= 4; gen++ {
		must(t, ns.Do(func() error {
			cfg, table := nhServers(gen, near, far, third)
			return d.SetInstance(cfg, table)
		}))
	}
	waitPublished(t, m, third, "a server of a later pass", macIs("02:be:a0:00:03:12"))
	time.Sleep(200 * time.Millisecond) // the rest of that pass
	if n := strings.Count(logs.String(), multipath); n != 1 {
		t.Errorf("the multipath route logged %d times, want once:\n%s", n, logs.String())
	}
	if _, ok := m.PublishedNextHop(far); ok {
		t.Error("the server behind the multipath route published on a later pass")
	}
}

// TestNextHopSubscriptionBroken: a route subscription that overruns (the
// daemon busy while routes change by the thousand) ends; the follower
// withdraws every entry, subscribes again and resolves every server — a
// server whose route went away while the subscription was overrun (its
// update lost) is withdrawn, the others published again — and follows
// updates after the renewal.
func TestNextHopSubscriptionBroken(t *testing.T) {
	ns, _, near, far, netMAC, ifindex := nhPair(t, "muxnhsub")
	var logs syncLog
	d := nhDaemon(t, ns, &logs, near, far)
	m := d.Mux()
	waitPublished(t, m, near, "first resolution", macIs(netMAC))
	waitPublished(t, m, far, "first resolution", macIs(netMAC))

	// The follower stalls in its next pass (it lists the servers under
	// the daemon's lock), routes change by the thousand: the subscription's
	// channel fills, then its socket, which the kernel overruns (ENOBUFS).
	// The removal of far's route comes last: its update is lost.
	func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		_, err := ns.Run("ip", "route", "add", "198.19.255.0/24", "dev", "eth0") // asks for a pass
		must(t, err)
		time.Sleep(200 * time.Millisecond) // the follower reaches it and waits for the lock
		var batch strings.Builder
		for i := range overrunRoutes() {
			fmt.Fprintf(&batch, "route add 198.19.%d.%d/32 dev eth0\n", i/256, i%256)
		}
		cmd := ns.Command("ip", "-batch", "-")
		cmd.Stdin = strings.NewReader(batch.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("ip -batch: %v: %s", err, out)
		}
		_, err = ns.Run("ip", "route", "del", "198.18.9.0/24")
		must(t, err)
	}()
	waitUntil(t, "the broken subscription renewed", 10*time.Second, func() bool {
		return strings.Contains(logs.String(), "next-hop subscription broke: subscribed again")
	})
	// Everything resolved again (the full pass comes only every 30 s).
	waitPublished(t, m, far, "the server whose route went while overrun", func(_ dataplane.ResolvedNextHop, ok bool) bool { return !ok })
	waitPublished(t, m, near, "published again", macIs(netMAC))

	// Updates after the renewal are followed: a neighbour's MAC, a route.
	must(t, ns.Netlink().NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.IP(near.AsSlice()), Family: netlink.FAMILY_V4,
		HardwareAddr: net.HardwareAddr{2, 0xbe, 0xa0, 0, 1, 0xd}, State: netlink.NUD_PERMANENT}))
	waitPublished(t, m, near, "new MAC after the renewal", macIs("02:be:a0:00:01:0d"))
	_, err := ns.Run("ip", "route", "add", "198.18.9.0/24", "via", "198.18.0.2")
	must(t, err)
	waitPublished(t, m, far, "route back after the renewal", macIs(netMAC))
	must(t, ns.Netlink().RouteDel(&netlink.Route{LinkIndex: ifindex, Dst: &net.IPNet{IP: net.IPv4(198, 18, 9, 0), Mask: net.CIDRMask(24, 32)},
		Gw: net.ParseIP("198.18.0.2")}))
	waitPublished(t, m, far, "route removed after the renewal", func(_ dataplane.ResolvedNextHop, ok bool) bool { return !ok })
}

// overrunRoutes is how many route changes overrun a stalled subscription:
// its channel, and a socket of the host's default receive buffer at an
// (under)estimated 256 bytes a notification; 4096 at least, 65536 at most.
func overrunRoutes() int {
	n := 4096
	if b, err := os.ReadFile("/proc/sys/net/core/rmem_default"); err == nil {
		if rmem, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && rmem/256+1024 > n {
			n = min(rmem/256+1024, 65536)
		}
	}
	return n
}

// TestNextHopFollowerMTU6: an IPv6 server's published MTU is the device's
// IPv6 MTU (set below its link MTU, as a router advertisement may), and a
// later change of it, which no netlink event tells, is followed within a
// resync.
func TestNextHopFollowerMTU6(t *testing.T) {
	ns, peer := netlabtest.NewRig(t, "muxnh6").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.2/24"), 0)
	must(t, ns.AddAddr("eth0", netip.MustParsePrefix("2001:db8::1/64")))
	must(t, peer.AddAddr("eth0", netip.MustParsePrefix("2001:db8::10/64")))
	must(t, ns.Sysctl("net.ipv6.conf.eth0.mtu", "1380"))
	server := netip.MustParseAddr("2001:db8::10")
	var logs syncLog
	var d *Daemon
	must(t, ns.Do(func() (err error) {
		d, err = Start(Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, PinDir: "-", Log: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			return err
		}
		table := forwarding.NewTable(67)
		table.Generation = 1
		table.Servers[1025] = forwarding.Server{Addr: server, State: forwarding.Active}
		for i := range table.Buckets {
			table.Buckets[i] = forwarding.Bucket{Current: 1025}
		}
		return d.SetInstance(forwarding.Instance{Name: "web6", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("2001:db8:100::1")},
			PortLow: 80, PortHigh: 80, Buckets: 67, Encap: forwarding.EncapGUE}, table)
	}))
	t.Cleanup(func() {
		ns.Do(d.Close)
		if t.Failed() {
			t.Logf("the daemon's log:\n%s", logs.String())
		}
	})
	m := d.Mux()
	mtuIs := func(mtu uint32) func(dataplane.ResolvedNextHop, bool) bool {
		return func(h dataplane.ResolvedNextHop, ok bool) bool { return ok && h.MTU == mtu }
	}
	waitPublished(t, m, server, "the device's IPv6 MTU", mtuIs(1380))
	must(t, ns.Sysctl("net.ipv6.conf.eth0.mtu", "1300"))
	waitPublished(t, m, server, "the device's IPv6 MTU lowered", mtuIs(1300))
}

// TestEveryThreadIn: a process whose threads are all in a namespace makes
// its next-hop sockets where it is (a packaged mux cannot enter one: no
// CAP_SYS_ADMIN); one thread in a test's namespace is not the process.
func TestEveryThreadIn(t *testing.T) {
	host, err := netns.Get()
	must(t, err)
	defer host.Close()
	if !everyThreadIn(host) {
		t.Error("the test process's threads are in its namespace, everyThreadIn says not")
	}
	ns, _ := netlabtest.NewRig(t, "muxnhthr").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.2/24"), 0)
	must(t, ns.Do(func() error {
		in, err := netns.Get()
		if err != nil {
			return err
		}
		defer in.Close()
		if everyThreadIn(in) {
			t.Error("one thread in a test namespace: everyThreadIn says the whole process is")
		}
		return nil
	}))
}
