package dataplane

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/vishvananda/netlink"
)

// The IPv6 mux bench: the mux at 2001:db8::1 on eth0, servers ::10-::12
// resolved on eth0, ::99 on the link but never resolved, 2001:db8:ffff::1
// without a route.
var (
	mux6Addr   = netip.MustParseAddr("2001:db8::1")
	mux6AddrV4 = netip.MustParseAddr("198.18.0.1")
	mux6VIP    = netip.MustParseAddr("2001:db8:100::1")
	mux6Client = netip.MustParseAddr("2001:db8:200::7")
	mux6Server = map[forwarding.ServerID]netip.Addr{1025: netip.MustParseAddr("2001:db8::10"),
		1026: netip.MustParseAddr("2001:db8::11"), 1027: netip.MustParseAddr("2001:db8::12"),
		1028: netip.MustParseAddr("2001:db8::99"), 1029: netip.MustParseAddr("2001:db8:ffff::1"),
		1030: netip.MustParseAddr("2001:db8:1::10")} // behind the gateway ::2, path MTU 1400
	mux6MAC = map[forwarding.ServerID]string{1025: "02:be:a0:00:01:10", 1026: "02:be:a0:00:01:11", 1027: "02:be:a0:00:01:12"}
)

const (
	mux6Buckets     = 8
	mux6Changed     = 1700000000
	mux6Incarnation = 1690000000
)

// mux6Table: bucket 1 moved from 1025 then 1027 to 1026 (history 1025,
// 1027); bucket 4's owner has no neighbour, bucket 5's no route, bucket 6's
// is behind a gateway on a route of MTU 1400.
func mux6Table() *forwarding.Table {
	t := forwarding.NewTable(mux6Buckets)
	t.Generation, t.Incarnation = 7, mux6Incarnation
	for id, a := range mux6Server {
		t.Servers[id] = forwarding.Server{Addr: a, State: forwarding.Active}
	}
	owners := []forwarding.ServerID{1025, 1026, 1025, 1026, 1028, 1029, 1030, 1027}
	for i, o := range owners {
		t.Buckets[i] = forwarding.Bucket{Current: o}
	}
	t.Buckets[1].History = forwarding.Chain{1025, 1027}
	t.Buckets[1].Changed = mux6Changed
	return t
}

// mux6QUIC is the QUIC option of the IPv6 instance (connection ids name
// servers, on UDP 443).
var mux6QUIC = forwarding.QUICOptions{ConfigID: 1, CIDLen: 8, Ports: forwarding.PortRange{Low: 443, High: 443}}

func mux6Instance() forwarding.Instance {
	return forwarding.Instance{Name: "v6", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{mux6VIP},
		Services: []forwarding.Service{{Protocol: forwarding.TCP, Ports: forwarding.PortList{{Low: 80, High: 80}}},
			{Protocol: forwarding.UDP, Ports: forwarding.PortList{{Low: 53, High: 53}, {Low: 443, High: 443}}}},
		Buckets: mux6Buckets, ChainWindow: time.Minute, ICMPEcho: forwarding.EchoAnswer, Encap: forwarding.EncapGUE,
		QUIC: &mux6QUIC}
}

func newMux6Bench(t *testing.T, addr4, addr6 netip.Addr) (*Mux, *muxBench) {
	netlabtest.RequireRoot(t)
	rig := netlabtest.NewRig(t, "mux6")
	rig.NoDAD = true
	ns, peer := rig.Namespace("mux"), rig.Namespace("net")
	must(t, ns.Sysctl("net.ipv6.conf.all.forwarding", "1"))
	rig.Link(ns, "eth0", netip.MustParsePrefix("2001:db8::1/64"), peer, "eth0", netip.MustParsePrefix("2001:db8::2/64"), 0)
	nl := ns.Netlink()
	eth0, err := nl.LinkByName("eth0")
	must(t, err)
	hw, _ := net.ParseMAC("02:be:a0:00:00:02")
	must(t, nl.LinkSetHardwareAddr(eth0, hw))
	for id, mac := range mux6MAC {
		m, _ := net.ParseMAC(mac)
		must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: eth0.Attrs().Index, IP: net.IP(mux6Server[id].AsSlice()), HardwareAddr: m,
			State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V6}))
	}
	gw, _ := net.ParseMAC("02:be:a0:00:01:99")
	must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: eth0.Attrs().Index, IP: net.ParseIP("2001:db8::2"), HardwareAddr: gw,
		State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V6}))
	// Locked: the kernel's IPv6 FIB reports a route's MTU to BPF only then
	// (ip6_mtu_from_fib6), the device's otherwise.
	_, err = ns.Run("ip", "-6", "route", "add", "2001:db8:1::/64", "via", "2001:db8::2", "dev", "eth0", "mtu", "lock", "1400")
	must(t, err)
	m, err := LoadMux(MuxOptions{Addr: addr4, Addr6: addr6})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	in := mux6Instance()
	must(t, in.Validate())
	must(t, m.SetInstance(in, mux6Table()))
	return m, &muxBench{ns: ns, ifindex: eth0.Attrs().Index}
}

// flow6To is a client flow (source port searched from 40000) whose bucket,
// by the Go model of the flow hash, is b.
func flow6To(proto uint8, dport uint16, b uint32) wire.Flow {
	for p := uint16(40000); ; p++ {
		f := wire.Flow{Src: mux6Client, Dst: mux6VIP, SrcPort: p, DstPort: dport, Proto: proto}
		if f.Bucket(mux6Buckets) == b {
			return f
		}
	}
}

// gue6Out is the frame the mux must send for inner (an IPv6 frame): GUE
// over IPv6 to server, private data for the previous owners prev (nil
// slice: none; withOpt false: no private data at all).
func gue6Out(inner []byte, f wire.Flow, server forwarding.ServerID, withOpt bool, prev []forwarding.ServerID, flags uint8, changed uint32) []byte {
	var priv []byte
	if withOpt {
		priv = make([]byte, 16)
		priv[0], priv[1], priv[3] = 0x9e, byte(16+16*len(prev)), flags
		binary.BigEndian.PutUint32(priv[4:], 7)
		binary.BigEndian.PutUint32(priv[8:], mux6Incarnation)
		binary.BigEndian.PutUint32(priv[12:], changed)
		for _, id := range prev {
			a := mux6Server[id].As16()
			priv = append(priv, a[:]...)
		}
	}
	in := inner[14:]
	dmac, _ := net.ParseMAC(mux6MAC[server])
	out := append(append([]byte{}, dmac...), 2, 0xbe, 0xa0, 0, 0, 2, 0x86, 0xdd)
	ip := make([]byte, 40)
	ip[0] = 0x60
	udpLen := 8 + 4 + len(priv) + len(in)
	binary.BigEndian.PutUint16(ip[4:], uint16(udpLen))
	ip[6], ip[7] = 17, 64
	s, d := mux6Addr.As16(), mux6Server[server].As16()
	copy(ip[8:], s[:])
	copy(ip[24:], d[:])
	udp := make([]byte, 12)
	binary.BigEndian.PutUint16(udp[0:], 0xc000|uint16(f.Hash()&0x3fff))
	binary.BigEndian.PutUint16(udp[2:], forwarding.DefaultGUEPort)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	udp[8], udp[9] = byte(len(priv)/4), 41
	out = append(out, ip...)
	out = append(out, udp...)
	out = append(out, priv...)
	return append(out, in...)
}

type mux6Case struct {
	name    string
	frame   []byte
	action  string
	counter string
	want    []byte // exact output, when set
}

func runMux6Cases(t *testing.T, m *Mux, b *muxBench, cases []mux6Case) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, err := m.Counters()
			must(t, err)
			action, out := runXDP(t, b.ns, b.ifindex, m.Program(), c.frame)
			after, err := m.Counters()
			must(t, err)
			if action != c.action {
				t.Errorf("action %s, want %s", action, c.action)
			}
			if d := after[c.counter] - before[c.counter]; d != 1 {
				t.Errorf("counter %s moved by %d, want 1", c.counter, d)
			}
			if c.want != nil && !bytes.Equal(out, c.want) {
				t.Errorf("output differs\n got %x\nwant %x", out, c.want)
			}
		})
	}
}

// TestMux6Paths runs IPv6 packets through the mux program: forwarded by
// bucket (with and without history, TCP and UDP), by MPTCP server id,
// through the longest extension-header chain allowed, and every refusal.
func TestMux6Paths(t *testing.T) {
	m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
	tcp := func(f wire.Flow, flags uint8, ext ...ext6) []byte {
		return pkt6{src: f.Src, dst: f.Dst, ext: ext, proto: 6, sport: f.SrcPort, dport: f.DstPort, flags: flags}.frame()
	}
	f0, f1 := flow6To(6, 80, 0), flow6To(6, 80, 1)
	u1 := flow6To(17, 53, 1)
	syn0, ack1 := tcp(f0, 0x02), tcp(f1, 0x10)
	udp1 := pkt6{src: u1.Src, dst: u1.Dst, proto: 17, sport: u1.SrcPort, dport: u1.DstPort, payload: []byte("query")}.frame()
	sid := wire.Flow{Src: mux6Client, Dst: mux6VIP, SrcPort: 41000, DstPort: 1026, Proto: 6}
	subflow := tcp(sid, 0x10)
	// The longest chain allowed: five headers, RFC 8200's order.
	five := tcp(f0, 0x10, optsHdr(0, 0), optsHdr(60, 1), routingHdr(0), fragHdr(0, false), optsHdr(60, 0))
	six := tcp(f0, 0x10, optsHdr(60, 0), optsHdr(60, 0), optsHdr(60, 0), optsHdr(60, 0), optsHdr(60, 0), optsHdr(60, 0))
	long := tcp(f0, 0x10, optsHdr(60, 32)) // 264 bytes of options
	overlong := tcp(f0, 0x10, optsHdr(60, 1))
	binary.BigEndian.PutUint16(overlong[18:], 10) // payload length ends inside the header
	overlong = overlong[:14+40+10]
	truncated := append([]byte{}, syn0...)
	binary.BigEndian.PutUint16(truncated[18:], 200)
	cutTCP := syn0[:14+40+12]
	with := func(b []byte, i int, v byte) []byte { c := append([]byte{}, b...); c[i] = v; return c }
	esp := pkt6{src: mux6Client, dst: mux6VIP, proto: 50, l4: make([]byte, 24)}.frame()
	echo := pkt6{src: mux6Client, dst: mux6VIP, proto: 58, l4: []byte{128, 0, 0, 0, 0, 1, 0, 1, 'p', 'i', 'n', 'g'}}.frame()
	binary.BigEndian.PutUint16(echo[56:], ^icmp6Sum(echo[14:]))
	ptb := pkt6{src: mux6Client, dst: mux6VIP, proto: 58, l4: make([]byte, 56)}.frame()
	ptb[54] = 2
	f6 := flow6To(6, 80, 6)
	big := pkt6{src: f6.Src, dst: f6.Dst, proto: 6, sport: f6.SrcPort, dport: f6.DstPort, flags: 0x10, payload: make([]byte, 1300)}.frame()
	fits := pkt6{src: f6.Src, dst: f6.Dst, proto: 6, sport: f6.SrcPort, dport: f6.DstPort, flags: 0x10, payload: make([]byte, 1200)}.frame()
	router := netip.MustParseAddr("2001:db8:300::1")
	steered := ptb6(router, mux6VIP, mux6VIP, mux6Client, 80, f1.SrcPort)
	notOurs := ptb6(router, mux6VIP, netip.MustParseAddr("2001:db8:100::2"), mux6Client, 80, f1.SrcPort)
	// A Packet Too Big as large as the path allows, about a connection of
	// bucket 6 (behind the MTU-1400 route): too big to encapsulate, and no
	// ICMPv6 error may answer an ICMPv6 error.
	bigPTB := append(ptb6(router, mux6VIP, mux6VIP, mux6Client, 80, f6.SrcPort), make([]byte, 1300)...)
	binary.BigEndian.PutUint16(bigPTB[18:], uint16(len(bigPTB)-54))
	shortQuote := append([]byte{}, steered[:14+40+8+40]...) // the quote ends before the ports
	binary.BigEndian.PutUint16(shortQuote[18:], 48)
	q1 := flow6To(17, 443, 1)
	quic := func(payload []byte) []byte {
		return pkt6{src: q1.Src, dst: q1.Dst, proto: 17, sport: q1.SrcPort, dport: 443, payload: payload}.frame()
	}
	quicOurs := quic(wiretest.QUICShort(mux6QUIC.QUICConnID(1027, []byte{1, 2, 3, 4, 5})))
	quicInitial := quic(wiretest.QUICLong(0, []byte{0x3a, 0xf1, 0x09, 0x22, 0x51, 0x6e, 0x70, 0x13}))
	q0 := flow6To(17, 443, 0)
	quicInitial0 := pkt6{src: q0.Src, dst: q0.Dst, proto: 17, sport: q0.SrcPort, dport: 443,
		payload: wiretest.QUICLong(0, []byte{0x3a, 0xf1, 0x09, 0x22, 0x51, 0x6e, 0x70, 0x13})}.frame()
	notVIP := tcp(wire.Flow{Src: mux6Client, Dst: netip.MustParseAddr("2001:db8:100::2"), SrcPort: 1, DstPort: 80, Proto: 6}, 0x02)

	runMux6Cases(t, m, b, []mux6Case{
		{"tcp syn by bucket", syn0, "tx", "fwd_bucket", gue6Out(syn0, f0, 1025, true, nil, 0, 0)},
		{"tcp with history", ack1, "tx", "fwd_with_previous", gue6Out(ack1, f1, 1026, true, []forwarding.ServerID{1025, 1027}, 0, mux6Changed)},
		{"udp with history returns to owner", udp1, "tx", "fwd_with_previous",
			gue6Out(udp1, u1, 1026, true, []forwarding.ServerID{1025, 1027, 1026}, 1, mux6Changed)},
		{"mptcp subflow by server id", subflow, "tx", "fwd_server_id", gue6Out(subflow, sid, 1026, false, nil, 0, 0)},
		{"quic by the server id in its connection id", quicOurs, "tx", "fwd_quic_cid", gue6Out(quicOurs, q1, 1027, false, nil, 0, 0)},
		{"quic initial by bucket, with history", quicInitial, "tx", "fwd_with_previous",
			gue6Out(quicInitial, q1, 1026, true, []forwarding.ServerID{1025, 1027, 1026}, 1, mux6Changed)},
		{"quic initial by bucket", quicInitial0, "tx", "quic_by_bucket", gue6Out(quicInitial0, q0, 1025, true, nil, 0, 0)},
		{"five extension headers", five, "tx", "fwd_ipv6", gue6Out(five, f0, 1025, true, nil, 0, 0)},
		{"six extension headers", six, "drop", "drop_ext_headers", nil},
		{"extension headers over 256 bytes", long, "drop", "drop_ext_headers", nil},
		{"extension header past the payload", overlong, "drop", "drop_truncated", nil},
		{"hop-by-hop after another header", tcp(f0, 0x10, optsHdr(60, 0), optsHdr(0, 0)), "drop", "drop_bad_header", nil},
		{"routing header with segments left", tcp(f0, 0x10, routingHdr(1)), "drop", "drop_ext_headers", nil},
		{"first fragment", tcp(f0, 0x10, fragHdr(0, true)), "drop", "drop_fragment", nil},
		{"later fragment", tcp(f0, 0x10, fragHdr(185, false)), "drop", "drop_fragment", nil},
		{"payload length past the frame", truncated, "drop", "drop_truncated", nil},
		{"tcp header cut", cutTCP, "drop", "drop_truncated", nil},
		{"version 4 in an IPv6 frame", with(syn0, 14, 0x40), "drop", "drop_bad_header", nil},
		{"tcp data offset 4", with(syn0, 14+40+12, 0x40), "drop", "drop_bad_header", nil},
		{"esp", esp, "drop", "drop_not_tcp", nil},
		{"closed port", tcp(flow6To(6, 81, 0), 0x02), "drop", "drop_closed_port", nil},
		{"owner without neighbour", tcp(flow6To(6, 80, 4), 0x02), "drop", "drop_no_neigh", nil},
		{"owner without route", tcp(flow6To(6, 80, 5), 0x02), "drop", "drop_no_route", nil},
		{"through the gateway, fits", fits, "tx", "fwd_bucket", nil},
		{"too big once encapsulated", big, "tx", "icmp_too_big", nil},
		{"echo request answered", echo, "tx", "icmp_echo_answered", nil},
		{"echo request with a wrong checksum not answered (issue 23)", with(echo, 57, echo[57]^0x01), "drop", "drop_icmp_bad_checksum", nil},
		{"packet too big quoting garbage", ptb, "drop", "drop_icmp", nil},
		{"packet too big steered as the quoted connection", steered, "tx", "fwd_icmp_frag_needed",
			gue6Out(steered, f1, 1026, true, []forwarding.ServerID{1025, 1027}, 0, mux6Changed)},
		{"packet too big, too big to steer", bigPTB, "drop", "drop_too_big", nil},
		{"packet too big quoting another address", notOurs, "drop", "drop_icmp", nil},
		{"packet too big with its quote cut", shortQuote, "drop", "drop_icmp", nil},
		{"not a VIP", notVIP, "pass", "pass_not_vip6", nil},
		{"frame too short for IPv6", syn0[:14+30], "pass", "pass_not_ipv4", nil},
	})

	t.Run("packet too big", func(t *testing.T) {
		_, out := runXDP(t, b.ns, b.ifindex, m.Program(), big)
		if len(out) != 14+40+8+128 {
			t.Fatalf("message of %d bytes, want %d", len(out), 14+40+8+128)
		}
		if !bytes.Equal(out[0:6], big[6:12]) || !bytes.Equal(out[6:12], big[0:6]) {
			t.Errorf("MACs not swapped: %x", out[:12])
		}
		if !bytes.Equal(out[22:38], big[38:54]) || !bytes.Equal(out[38:54], big[22:38]) || out[20] != 58 || out[54] != 2 || out[55] != 0 {
			t.Errorf("not a Packet Too Big from the VIP to the client: %x", out[:62])
		}
		if mtu := binary.BigEndian.Uint32(out[58:]); mtu != 1400-68 {
			t.Errorf("MTU %d, want %d (route MTU 1400 minus 68 bytes of GUE over IPv6)", mtu, 1400-68)
		}
		if !bytes.Equal(out[62:], big[14:14+128]) {
			t.Error("the quote is not the packet's first 128 bytes")
		}
		if sum := icmp6Sum(out[14:]); sum != 0xffff {
			t.Errorf("checksum does not verify (sum %#x)", sum)
		}
		_, out = runXDP(t, b.ns, b.ifindex, m.Program(), fits)
		if !bytes.Equal(out[0:6], []byte{2, 0xbe, 0xa0, 0, 1, 0x99}) {
			t.Errorf("forwarded to %x, want the gateway's MAC", out[0:6])
		}
	})

	t.Run("echo reply", func(t *testing.T) {
		_, out := runXDP(t, b.ns, b.ifindex, m.Program(), echo)
		if !bytes.Equal(out[22:38], echo[38:54]) || !bytes.Equal(out[38:54], echo[22:38]) || out[54] != 129 {
			t.Fatalf("reply %x: addresses not swapped or type not 129", out)
		}
		if sum := icmp6Sum(out[14:]); sum != 0xffff {
			t.Errorf("reply checksum does not verify (sum %#x)", sum)
		}
	})
}

// icmp6Sum is the one's-complement sum of an ICMPv6 message with its
// pseudo-header: 0xffff when the checksum in it is right. ip6 starts at
// the IPv6 header; the message follows it.
func icmp6Sum(ip6 []byte) uint16 {
	msg := ip6[40:]
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(b[i])<<8 | uint32(b[i+1])
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip6[8:40])
	sum += uint32(len(msg)) + 58
	add(msg)
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	return uint16(sum)
}

// TestMux6Addresses: a mux without an IPv6 address refuses an IPv6
// instance with a clear error (it has no source for GUE over IPv6); an
// IPv6-only mux refuses an IPv4 instance and forwards its IPv6 one.
func TestMux6Addresses(t *testing.T) {
	netlabtest.RequireRoot(t)
	m4, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1")})
	must(t, err)
	defer m4.Close()
	if err := m4.SetInstance(mux6Instance(), mux6Table()); err == nil || !strings.Contains(err.Error(), "no IPv6 address") {
		t.Errorf("IPv6 instance on a mux without an IPv6 address: %v, want a refusal naming the missing address", err)
	}
	m6, b := newMux6Bench(t, netip.Addr{}, mux6Addr)
	v4 := forwarding.Instance{Name: "v4", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		PortLow: 80, PortHigh: 80, Buckets: 4}
	t4 := forwarding.NewTable(4)
	t4.Servers[1025] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.10"), State: forwarding.Active}
	for i := range t4.Buckets {
		t4.Buckets[i] = forwarding.Bucket{Current: 1025}
	}
	if err := m6.SetInstance(v4, t4); err == nil || !strings.Contains(err.Error(), "no IPv4 address") {
		t.Errorf("IPv4 instance on an IPv6-only mux: %v, want a refusal naming the missing address", err)
	}
	f0 := flow6To(6, 80, 0)
	runMux6Cases(t, m6, b, []mux6Case{{"IPv6-only mux forwards", pkt6{src: f0.Src, dst: f0.Dst, proto: 6, sport: f0.SrcPort, dport: 80, flags: 2}.frame(),
		"tx", "fwd_ipv6", nil}})
}

// TestMux6ServerChanges: deltas on an IPv6 instance, as the controller
// sends them one at a time: a server's address changed in place (the word
// cleared, a grace period, the new address, the word again) is what the
// next packet is sent to; a removed server's subflows are dropped, counted;
// the generation reaches the private data.
func TestMux6ServerChanges(t *testing.T) {
	m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
	nl := b.ns.Netlink()
	eth0, err := nl.LinkByIndex(b.ifindex)
	must(t, err)
	moved := netip.MustParseAddr("2001:db8::13")
	mac, _ := net.ParseMAC("02:be:a0:00:01:13")
	must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: eth0.Attrs().Index, IP: net.IP(moved.AsSlice()), HardwareAddr: mac,
		State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V6}))
	f7 := flow6To(6, 80, 7) // bucket 7: server 1027
	frame := pkt6{src: f7.Src, dst: f7.Dst, proto: 6, sport: f7.SrcPort, dport: f7.DstPort, flags: 0x10}.frame()
	send := func() (string, []byte) { return runXDP(t, b.ns, b.ifindex, m.Program(), frame) }
	if _, out := send(); !bytes.Equal(out[38:54], mux6Server[1027].AsSlice()) {
		t.Fatalf("before the change: sent to %x, want %v", out[38:54], mux6Server[1027])
	}
	must(t, m.ApplyDelta("v6", &forwarding.Delta{Generation: 8,
		Servers: []forwarding.ServerChange{{ID: 1027, Server: forwarding.Server{Addr: moved, State: forwarding.Active}}}}))
	action, out := send()
	if action != "tx" || !bytes.Equal(out[38:54], moved.AsSlice()) || !bytes.Equal(out[0:6], mac) {
		t.Fatalf("after the change: %s to %x (MAC %x), want tx to %v", action, out[38:54], out[0:6], moved)
	}
	if gen := binary.BigEndian.Uint32(out[14+52+4:]); gen != 8 {
		t.Errorf("private data carries generation %d, want 8", gen)
	}
	// Server 1025 removed (after its buckets moved): its subflows dropped.
	d := &forwarding.Delta{Generation: 9, Servers: []forwarding.ServerChange{{ID: 1025, Remove: true}}}
	for _, i := range []uint32{0, 2} {
		d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: i, Bucket: forwarding.Bucket{Current: 1026}})
	}
	d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: 1, Bucket: forwarding.Bucket{Current: 1026, History: forwarding.Chain{1027}, Changed: mux6Changed}})
	must(t, m.ApplyDelta("v6", d))
	sub := pkt6{src: mux6Client, dst: mux6VIP, proto: 6, sport: 41000, dport: 1025, flags: 0x10}.frame()
	runMux6Cases(t, m, b, []mux6Case{{"subflow to a removed server", sub, "drop", "drop_unknown_server", nil}})
}

// TestMux6FoldCollisions: IPv6 VIPs are found by the fold of their
// address, and distinct addresses fold alike (the fold is the XOR of the
// address's words, so their order does not count). Two instances whose VIPs
// collide each get their own packets, and a third address of the same fold
// that is no VIP is passed to the kernel.
func TestMux6FoldCollisions(t *testing.T) {
	m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
	// 2001:db8:100::1 is words 20010db8 01000000 0 1; these permute them.
	twin := netip.MustParseAddr("2001:db8::100:0:0:1")
	none := netip.MustParseAddr("2001:db8:0:1::100:0")
	if foldRaw(twin) != foldRaw(mux6VIP) || foldRaw(none) != foldRaw(mux6VIP) {
		t.Fatal("the test's addresses do not fold alike")
	}
	in := mux6Instance()
	in.Name, in.VIPs = "twin", []netip.Addr{twin}
	tb := mux6Table()
	for i := range tb.Buckets {
		tb.Buckets[i] = forwarding.Bucket{Current: 1027}
	}
	must(t, in.Validate())
	must(t, m.SetInstance(in, tb))
	f0 := flow6To(6, 80, 0) // bucket 0: 1025 in mux6's table, 1027 in twin's
	to := func(dst netip.Addr) []byte {
		return pkt6{src: f0.Src, dst: dst, proto: 6, sport: f0.SrcPort, dport: 80, flags: 0x02}.frame()
	}
	for _, c := range []struct {
		vip  netip.Addr
		want forwarding.ServerID
	}{{mux6VIP, 1025}, {twin, 1027}} {
		action, out := runXDP(t, b.ns, b.ifindex, m.Program(), to(c.vip))
		if action != "tx" || !bytes.Equal(out[38:54], mux6Server[c.want].AsSlice()) {
			t.Errorf("to %v: %s to %x, want server %d", c.vip, action, out[38:54], c.want)
		}
	}
	runMux6Cases(t, m, b, []mux6Case{{"same fold, no VIP", to(none), "pass", "pass_not_vip6", nil}})
	// Removing one leaves the other found.
	must(t, m.RemoveInstance("v6"))
	runMux6Cases(t, m, b, []mux6Case{{"removed VIP", to(mux6VIP), "pass", "pass_not_vip6", nil},
		{"its twin still", to(twin), "tx", "fwd_bucket", nil}})
}

// TestMux6RecordDefences: records the control plane never writes for IPv6
// (it refuses IPv6 without GUE and IPv6 with another strategy, and an IPv6
// instance on a mux without an IPv6 address) are still dropped and counted
// by the program, never sent out wrongly. The records are written here
// below the instance API, as a damaged or hand-written state would.
func TestMux6RecordDefences(t *testing.T) {
	m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
	in := m.instances["v6"]
	rec, _, err := m.vipRecord(in, mux6VIP)
	must(t, err)
	f0 := flow6To(6, 80, 0)
	to := func(dst netip.Addr) []byte {
		return pkt6{src: f0.Src, dst: dst, proto: 6, sport: f0.SrcPort, dport: 80, flags: 0x02}.frame()
	}
	ipip, maglev := netip.MustParseAddr("2001:db8:100::a"), netip.MustParseAddr("2001:db8:100::b")
	r := rec
	r.Encap = 0 // IP-in-IP: no IPv6 form
	must(t, m.vips.set(ipip, r))
	r = rec
	r.Strategy = uint8(forwarding.StrategyMaglev.Code())
	must(t, m.vips.set(maglev, r))
	runMux6Cases(t, m, b, []mux6Case{
		{"IPv6 record without GUE", to(ipip), "drop", "drop_encap6", nil},
		{"IPv6 record of another strategy", to(maglev), "drop", "drop_bad_strategy", nil},
	})

	m4, err := LoadMux(MuxOptions{Addr: mux6AddrV4})
	must(t, err)
	defer m4.Close()
	must(t, m4.vips.set(mux6VIP, rec)) // names a table slot m4 has not loaded
	runMux6Cases(t, m4, b, []mux6Case{{"IPv6 record on a mux without its tables", to(mux6VIP), "drop", "drop_no_table", nil}})
}
