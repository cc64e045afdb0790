package dataplane

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/vishvananda/netlink"
)

// priv6 is GUE private data as a mux writes it for IPv6 (struct
// beamer_opt6): generation gen of the mux6 incarnation, previous owners prev.
func priv6(gen uint32, hop, flags uint8, changed uint32, prev ...netip.Addr) []byte {
	p := make([]byte, 16)
	p[0], p[1], p[2], p[3] = 0x9e, byte(16+16*len(prev)), hop, flags
	binary.BigEndian.PutUint32(p[4:], gen)
	binary.BigEndian.PutUint32(p[8:], mux6Incarnation)
	binary.BigEndian.PutUint32(p[12:], changed)
	for _, a := range prev {
		b := a.As16()
		p = append(p, b[:]...)
	}
	return p
}

// gue6Wrap puts inner (an IPv6 frame) in GUE over IPv6 from src to dst.
func gue6Wrap(inner []byte, src, dst netip.Addr, dport uint16, priv []byte) []byte {
	in := inner[14:]
	out := []byte{2, 0xbe, 0xa0, 0, 1, 0x11, 2, 0xbe, 0xa0, 0, 0, 2, 0x86, 0xdd}
	ip := make([]byte, 40)
	ip[0] = 0x60
	udpLen := 12 + len(priv) + len(in)
	binary.BigEndian.PutUint16(ip[4:], uint16(udpLen))
	ip[6], ip[7] = 17, 64
	s, d := src.As16(), dst.As16()
	copy(ip[8:], s[:])
	copy(ip[24:], d[:])
	udp := make([]byte, 12)
	binary.BigEndian.PutUint16(udp[0:], 0xc123)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(udpLen))
	udp[8], udp[9] = byte(len(priv)/4), 41
	out = append(append(append(out, ip...), udp...), priv...)
	return append(out, in...)
}

// The agent bench is server 1026 (2001:db8::11): the VIP and a client on
// loopback, a listener on [VIP]:80 with one open connection from the client
// (port 41000), and a resolved neighbour for server 1025 (::10).
func newAgent6Bench(t *testing.T) *agentBench {
	netlabtest.RequireRoot(t)
	rig := netlabtest.NewRig(t, "agt6")
	rig.NoDAD = true
	ns, peer := rig.Namespace("srv"), rig.Namespace("net")
	must(t, ns.Sysctl("net.ipv6.conf.all.forwarding", "1"))
	rig.Link(ns, "eth0", netip.MustParsePrefix("2001:db8::11/64"), peer, "eth0", netip.MustParsePrefix("2001:db8::2/64"), 0)
	nl := ns.Netlink()
	eth0, err := nl.LinkByName("eth0")
	must(t, err)
	hw, _ := net.ParseMAC("02:be:a0:00:01:11")
	must(t, nl.LinkSetHardwareAddr(eth0, hw))
	mac, _ := net.ParseMAC(mux6MAC[1025])
	must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: eth0.Attrs().Index, IP: net.IP(mux6Server[1025].AsSlice()), HardwareAddr: mac,
		State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V6}))
	addAddr6(t, ns, "lo", netip.PrefixFrom(mux6VIP, 128))
	addAddr6(t, ns, "lo", netip.PrefixFrom(mux6Client, 128))
	must(t, ns.Do(func() error {
		l, err := net.Listen("tcp6", netip.AddrPortFrom(mux6VIP, 80).String())
		if err != nil {
			return err
		}
		t.Cleanup(func() { l.Close() })
		d := net.Dialer{LocalAddr: net.TCPAddrFromAddrPort(netip.AddrPortFrom(mux6Client, 41000)), Timeout: 2 * time.Second}
		c, err := d.Dial("tcp6", l.Addr().String())
		if err != nil {
			return err
		}
		t.Cleanup(func() { c.Close() })
		s, err := l.Accept()
		if err != nil {
			return err
		}
		t.Cleanup(func() { s.Close() })
		// A UDP flow of this server's: a socket connected to the client.
		u, err := udpSocket6(netip.AddrPortFrom(mux6VIP, 53), netip.AddrPortFrom(mux6Client, 5353))
		if err != nil {
			return err
		}
		t.Cleanup(func() { u.Close() })
		return nil
	}))
	a, err := LoadAgent(AgentOptions{Addr6: mux6Server[1026], Trusted: []netip.Prefix{netip.MustParsePrefix("2001:db8::/64")},
		VIPs: []AgentVIP{{VIP: mux6VIP, Buckets: mux6Buckets, ChainWindow: time.Minute}}, GenerationMemory: -1})
	must(t, err)
	t.Cleanup(func() { a.Close() })
	a.SyncClock(time.Unix(mux6Changed+10, 0))
	return &agentBench{ns: ns, ifindex: eth0.Attrs().Index, agent: a}
}

type agent6Case struct {
	name    string
	frame   []byte
	action  string
	counter string
	want    []byte
}

// TestAgent6Paths runs GUE-over-IPv6 packets through the agent's tc
// program, in order (the first sets the newest generation): kept (SYN, no
// private data, newest without history, a local socket's), chained to the
// previous owner with the outer header rewritten, dropped as stale, and
// every refusal of hostile input.
func TestAgent6Paths(t *testing.T) {
	b := newAgent6Bench(t)
	me, prev, other := mux6Server[1026], mux6Server[1025], mux6Server[1027]
	tcp := func(sport uint16, flags uint8, ext ...ext6) []byte {
		return pkt6{src: mux6Client, dst: mux6VIP, ext: ext, proto: 6, sport: sport, dport: 80, flags: flags}.frame()
	}
	wrap := func(inner []byte, priv []byte) []byte {
		return gue6Wrap(inner, mux6Addr, me, forwarding.DefaultGUEPort, priv)
	}
	decapped := func(inner []byte) []byte {
		return append([]byte{2, 0xbe, 0xa0, 0, 1, 0x11, 2, 0xbe, 0xa0, 0, 0, 2, 0x86, 0xdd}, inner[14:]...)
	}
	syn, stray, local := tcp(40001, 0x02), tcp(40002, 0x10), tcp(41000, 0x10)
	history := priv6(7, 0, 0, mux6Changed, prev, other)
	chained := wrap(stray, history)
	// What server 1026 sends on: from itself to 1025, hop 1, the rest as received.
	wantChain := append([]byte{}, chained...)
	copy(wantChain[0:6], []byte{2, 0xbe, 0xa0, 0, 1, 0x10})
	copy(wantChain[6:12], []byte{2, 0xbe, 0xa0, 0, 1, 0x11})
	s, d := me.As16(), prev.As16()
	copy(wantChain[22:38], s[:])
	copy(wantChain[38:54], d[:])
	wantChain[14+52+2] = 1
	badType := wrap(stray, history)
	badType[14+52] = 0x9f
	badHop := wrap(stray, priv6(7, 3, 0, mux6Changed, prev, other))
	ipv4Inner := wrap(stray, history)
	ipv4Inner[14+40+9] = 4
	badUDPLen := wrap(stray, history)
	binary.BigEndian.PutUint16(badUDPLen[14+44:], 99)
	truncated := wrap(stray, history)
	binary.BigEndian.PutUint16(truncated[18:], 2000)
	udp := func(sport uint16) []byte {
		return pkt6{src: mux6Client, dst: mux6VIP, proto: 17, sport: sport, dport: 53, payload: []byte("q")}.frame()
	}
	udpHistory := priv6(7, 0, 1, mux6Changed, prev, me) // RETURN: the owner (us) ends the list
	router := netip.MustParseAddr("2001:db8:300::1")
	unknownVIP := pkt6{src: mux6Client, dst: netip.MustParseAddr("2001:db8:100::9"), proto: 6, sport: 1, dport: 80, flags: 0x10}.frame()

	cases := []agent6Case{
		{"syn kept", wrap(syn, priv6(7, 0, 0, 0)), "pass", "local_syn", decapped(syn)},
		{"no private data kept", wrap(stray, nil), "pass", "stack_no_option", decapped(stray)},
		{"newest without history to the stack", wrap(stray, priv6(7, 0, 0, 0)), "pass", "to_stack", decapped(stray)},
		{"chained to the previous owner", chained, "redirect", "chained", wantChain},
		{"local connection kept", wrap(local, history), "pass", "local_socket", decapped(local)},
		{"stale mux dropped", wrap(stray, priv6(6, 0, 0, 0)), "drop", "drop_stale_generation", nil},
		{"previous owner is us: not chained", wrap(stray, priv6(6, 0, 0, mux6Changed, me)), "drop", "drop_stale_generation", nil},
		{"untrusted source", gue6Wrap(stray, netip.MustParseAddr("2001:db8:ffff::1"), me, forwarding.DefaultGUEPort, history), "drop", "drop_untrusted", nil},
		{"to another server", gue6Wrap(stray, mux6Addr, other, forwarding.DefaultGUEPort, history), "pass", "pass_not_for_us", nil},
		{"udp to another port", gue6Wrap(stray, mux6Addr, me, 6081, history), "pass", "pass_not_encap", nil},
		{"private data of another type", badType, "drop", "drop_bad_option", nil},
		{"hop beyond the list", badHop, "drop", "drop_bad_option", nil},
		{"gue naming an IPv4 inner packet", ipv4Inner, "drop", "drop_bad_option", nil},
		{"udp length disagrees", badUDPLen, "drop", "drop_bad_header", nil},
		{"outer payload past the frame", truncated, "drop", "drop_truncated", nil},
		{"inner extension chain too long", wrap(tcp(40003, 0x10, optsHdr(60, 0), optsHdr(60, 0), optsHdr(60, 0), optsHdr(60, 0),
			optsHdr(60, 0), optsHdr(60, 0)), history), "drop", "drop_ext_headers", nil},
		{"inner fragment", wrap(tcp(40003, 0x10, fragHdr(0, true)), history), "drop", "drop_fragment", nil},
		{"inner ICMPv6 other than packet too big", wrap(pkt6{src: mux6Client, dst: mux6VIP, proto: 58, l4: make([]byte, 8)}.frame(), history), "drop", "drop_icmp", nil},
		{"unknown VIP", wrap(unknownVIP, history), "drop", "drop_unknown_vip", nil},
		{"udp of a connected socket kept", wrap(udp(5353), udpHistory), "pass", "local_socket", nil},
		{"udp of no socket chained", wrap(udp(5354), udpHistory), "redirect", "chained", nil},
		{"packet too big for a local connection", wrap(ptb6(router, mux6VIP, mux6VIP, mux6Client, 80, 41000), history), "pass", "local_socket", nil},
		{"packet too big for a chained connection", wrap(ptb6(router, mux6VIP, mux6VIP, mux6Client, 80, 40002), history), "redirect", "icmp_frag_needed", nil},
		{"packet too big quoting another VIP", wrap(ptb6(router, mux6VIP, mux6Server[1027], mux6Client, 80, 40002), history), "drop", "drop_icmp", nil},
	}
	for _, c := range cases {
		before, err := b.agent.Counters()
		must(t, err)
		action, out := runTC(t, b.ns, b.ifindex, b.agent.Program(), c.frame)
		after, err := b.agent.Counters()
		must(t, err)
		if action != c.action {
			t.Errorf("%s: action %s, want %s", c.name, action, c.action)
		}
		if d := after[c.counter] - before[c.counter]; d != 1 {
			t.Errorf("%s: counter %s moved by %d, want 1", c.name, c.counter, d)
		}
		if c.want != nil && !bytes.Equal(out, c.want) {
			t.Errorf("%s: output differs\n got %x\nwant %x", c.name, out, c.want)
		}
	}
	if got := b.agent.NewestSeen(0); got != uint64(mux6Incarnation)<<32|7 {
		t.Errorf("newest remembered %#x, want incarnation %d generation 7", got, mux6Incarnation)
	}
}

// udpSocket6 is a UDP socket bound to local and connected to remote.
func udpSocket6(local, remote netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(local)}
	return d.Dial("udp6", remote.String())
}

// The agent6 bench's frames: a TCP segment from the client to the VIP's
// port 80, wrapped in GUE from the mux to this server (1026), and what the
// server's stack receives once the agent has decapsulated it.
func bench6TCP(sport uint16, flags uint8) []byte {
	return pkt6{src: mux6Client, dst: mux6VIP, proto: 6, sport: sport, dport: 80, flags: flags}.frame()
}

func bench6Wrap(inner, priv []byte) []byte {
	return gue6Wrap(inner, mux6Addr, mux6Server[1026], forwarding.DefaultGUEPort, priv)
}

func bench6Decapped(inner []byte) []byte {
	return append([]byte{2, 0xbe, 0xa0, 0, 1, 0x11, 2, 0xbe, 0xa0, 0, 0, 2, 0x86, 0xdd}, inner[14:]...)
}
