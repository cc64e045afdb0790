package dataplane

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/vishvananda/netlink"
)

// tooBigNet is a mux namespace whose eth0 (MTU 1500) reaches the servers
// 198.18.0.10 (id 1025) and 198.18.0.11 (id 1026), their MACs known.
func tooBigNet(t *testing.T) (*netlab.Namespace, int, *Mux) {
	ns, _ := netlabtest.NewRig(t, "toobig").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.2/24"), 1500)
	must(t, ns.Sysctl("net.ipv4.ip_forward", "1"))
	nl := ns.Netlink()
	eth0, err := nl.LinkByName("eth0")
	must(t, err)
	for i, s := range []string{"198.18.0.10", "198.18.0.11"} {
		must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: eth0.Attrs().Index, IP: net.ParseIP(s), Family: netlink.FAMILY_V4,
			HardwareAddr: net.HardwareAddr{2, 0xbe, 0xa0, 0, 1, byte(i)}, State: netlink.NUD_PERMANENT}))
	}
	m, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1")})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	setWeb(t, m, 1, forwarding.EncapIPIP, netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.11"))
	return ns, eth0.Attrs().Index, m
}

// setWeb gives m the instance "web" (tooBigVIP, port 80, 67 buckets) at
// generation gen with encapsulation encap: servers 1025, 1026, … at addrs,
// every bucket to 1025.
func setWeb(t *testing.T, m *Mux, gen uint32, encap forwarding.Encap, addrs ...netip.Addr) {
	t.Helper()
	table := forwarding.NewTable(67)
	table.Generation = gen
	for i, a := range addrs {
		table.Servers[forwarding.ServerID(1025+i)] = forwarding.Server{Addr: a, State: forwarding.Active}
	}
	for i := range table.Buckets {
		table.Buckets[i] = forwarding.Bucket{Current: 1025}
	}
	must(t, m.SetInstance(forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer,
		VIPs: []netip.Addr{tooBigVIP}, PortLow: 80, PortHigh: 80, Buckets: 67, Encap: encap}, table))
}

var (
	tooBigVIP    = netip.MustParseAddr("198.18.100.1")
	tooBigClient = netip.MustParseAddr("198.18.50.7")
)

// tooBigFrame is a client's TCP segment of IP total length size to port.
func tooBigFrame(size int, port uint16, df bool) []byte {
	s := wiretest.Segment{Flow: wire.Flow{Src: tooBigClient, Dst: tooBigVIP, SrcPort: 40000, DstPort: port},
		Flags: wiretest.ACK, Seq: 1, Ack: 1, IPID: 77, Payload: make([]byte, size-40)}
	ip := s.IPv4()
	if !df {
		ip[6] &^= 0x40
		ip[10], ip[11] = 0, 0
		binary.BigEndian.PutUint16(ip[10:], wire.Checksum(ip[:20]))
	}
	return wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, ip)
}

// checkFragNeeded checks a reply frame byte by byte: MACs swapped, IPv4
// from the VIP to the client with a right checksum, ICMP 3/4 with the
// next-hop MTU and a right checksum, quoting the packet's IPv4 header and
// first 8 bytes of TCP.
func checkFragNeeded(t *testing.T, in, out []byte, mtu uint16) {
	t.Helper()
	if len(out) < 70 {
		t.Fatalf("reply of %d bytes, want 70", len(out))
	}
	out = out[:70]
	if !bytes.Equal(out[0:6], in[6:12]) || !bytes.Equal(out[6:12], in[0:6]) || out[12] != 8 || out[13] != 0 {
		t.Errorf("Ethernet header %x, want the packet's MACs swapped", out[:14])
	}
	ip := out[14:34]
	if ip[0] != 0x45 || binary.BigEndian.Uint16(ip[2:]) != 56 || ip[8] != 64 || ip[9] != 1 ||
		!bytes.Equal(ip[12:16], tooBigVIP.AsSlice()) || !bytes.Equal(ip[16:20], tooBigClient.AsSlice()) {
		t.Errorf("IPv4 header %x: want 56 bytes of ICMP from the VIP to the client, TTL 64", ip)
	}
	if wire.Checksum(ip) != 0 {
		t.Errorf("IPv4 header checksum wrong: %x", ip)
	}
	icmp := out[34:70]
	if icmp[0] != 3 || icmp[1] != 4 || binary.BigEndian.Uint16(icmp[4:]) != 0 {
		t.Errorf("ICMP header %x, want type 3 code 4", icmp[:8])
	}
	if got := binary.BigEndian.Uint16(icmp[6:]); got != mtu {
		t.Errorf("next-hop MTU %d, want %d", got, mtu)
	}
	if wire.Checksum(icmp) != 0 {
		t.Errorf("ICMP checksum wrong: %x", icmp)
	}
	if !bytes.Equal(icmp[8:36], in[14:42]) {
		t.Errorf("quoted %x, want the packet's IPv4 header and 8 bytes of TCP %x", icmp[8:36], in[14:42])
	}
}

// TestTooBig: a VIP packet that would exceed the egress MTU (1500) once
// encapsulated is answered with ICMP "fragmentation needed" giving 1500
// minus the overhead (36 with the option, 20 without), the same whether the
// next-hop cache is cold or warm; without DF it is dropped; and each packet
// moves exactly one decision counter (issue 11, row "a frame too large once
// encapsulated").
func TestTooBig(t *testing.T) {
	ns, ifindex, m := tooBigNet(t)
	step := func(name string, frame []byte, wantAction string, wantCounter string) []byte {
		t.Helper()
		before, err := m.Counters()
		must(t, err)
		action, out := runXDP(t, ns, ifindex, m.Program(), frame)
		after, err := m.Counters()
		must(t, err)
		if action != wantAction {
			t.Errorf("%s: action %s, want %s", name, action, wantAction)
		}
		moved := 0
		for k, v := range after {
			if k == "fwd_with_previous" {
				continue // a detail of fwd_bucket
			}
			if d := v - before[k]; d != 0 {
				moved += int(d)
				if k != wantCounter || d != 1 {
					t.Errorf("%s: counter %s moved by %d, want only %s by 1", name, k, d, wantCounter)
				}
			}
		}
		if moved != 1 {
			t.Errorf("%s: %d counts, want exactly 1 (%s)", name, moved, wantCounter)
		}
		return out
	}

	m.FlushNextHops()
	big := tooBigFrame(1500, 80, true)
	cold := step("cold cache", big, "tx", "icmp_too_big")
	checkFragNeeded(t, big, cold, 1464)
	fits := tooBigFrame(1464, 80, true)
	step("fits, warms the cache", fits, "tx", "fwd_bucket")
	warm := step("warm cache", big, "tx", "icmp_too_big")
	checkFragNeeded(t, big, warm, 1464)
	if !bytes.Equal(cold[:70], warm[:70]) {
		t.Errorf("replies differ between a cold and a warm next-hop cache:\n%x\n%x", cold[:70], warm[:70])
	}
	step("one byte over", tooBigFrame(1465, 80, true), "tx", "icmp_too_big")

	// MPTCP subflow by server id: no option, 20 bytes of overhead.
	step("server id fits", tooBigFrame(1480, 1026, true), "tx", "fwd_server_id")
	sub := tooBigFrame(1481, 1026, true)
	checkFragNeeded(t, sub, step("server id too big", sub, "tx", "icmp_too_big"), 1480)

	step("no DF", tooBigFrame(1500, 80, false), "drop", "drop_too_big")

	// Buckets with two previous owners: the option grows to 16 + 4·2 bytes,
	// the overhead to 44, the MTU the client is told to 1456.
	hist := forwarding.NewTable(67)
	hist.Generation = 2
	hist.Servers[1025] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.10"), State: forwarding.Active}
	hist.Servers[1026] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.11"), State: forwarding.Active}
	hist.Servers[1027] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.12"), State: forwarding.Retired}
	for i := range hist.Buckets {
		var h forwarding.Chain
		h[0], h[1] = 1026, 1027
		hist.Buckets[i] = forwarding.Bucket{Current: 1025, History: h, Changed: 1_800_000_000}
	}
	must(t, m.SetInstance(forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer,
		VIPs: []netip.Addr{tooBigVIP}, PortLow: 80, PortHigh: 80, Buckets: 67}, hist))
	step("history fits", tooBigFrame(1456, 80, true), "tx", "fwd_bucket")
	long := tooBigFrame(1457, 80, true)
	checkFragNeeded(t, long, step("history too big", long, "tx", "icmp_too_big"), 1456)

	// A route with its own, smaller MTU is the one that counts (locked: like
	// the kernel forwarding path, the FIB uses a route MTU for forwarded
	// packets only when locked or with ip_forward_use_pmtu).
	_, err := ns.Run("ip", "route", "add", "198.18.0.10/32", "dev", "eth0", "mtu", "lock", "1400")
	must(t, err)
	m.FlushNextHops()
	out := step("route MTU", big, "tx", "icmp_too_big")
	checkFragNeeded(t, big, out, 1356) // 1400 − 44 (the option with two previous owners)
	step("route MTU, cached", tooBigFrame(1400, 80, true), "tx", "icmp_too_big")
}
