package model

import (
	"encoding/binary"
	"encoding/hex"
	"net"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

var (
	serverA = netip.MustParseAddr("198.18.0.10") // previous owner
	serverB = netip.MustParseAddr("198.18.0.11") // the agent under test
	serverC = netip.MustParseAddr("198.18.0.12") // an older owner
	vip2    = netip.MustParseAddr("198.18.100.2")
)

const (
	agentNow  = 1763700300
	inc1      = agentNow - 86400 // the instance's incarnation (a day old)
	inc2      = agentNow - 60    // a newer one (a controller took over a minute ago)
	agentSkew = 60
	agentJump = 1000
)

// agentScenario is the agent half of testdata/vectors.json before outputs:
// server B serves two VIPs (one with chaining, one without), A is the
// previous owner of moved buckets.
func agentScenario() (wiretest.AgentScenario, []wiretest.PacketCase) {
	s := wiretest.AgentScenario{
		Addr:       serverB,
		Now:        agentNow,
		MaxSkew:    agentSkew,
		MaxGenJump: agentJump,
		VIPs: []wiretest.AgentVIPVector{
			{VIP: vip, Buckets: 16, Window: 240},
			{VIP: vip2, Buckets: 8, Window: 0},
		},
		// The second prefix: trusted servers the agent has no route to.
		Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24"), netip.MustParsePrefix("198.19.250.0/24")},
		Sockets: []wiretest.SocketVector{
			{Kind: "listen", Local: netip.AddrPortFrom(vip, 80)},
			{Kind: "listen", Local: netip.AddrPortFrom(vip2, 80)},
			{Kind: "connection", Local: netip.AddrPortFrom(vip, 80), Remote: netip.AddrPortFrom(client, 41000)},
			{Kind: "connection", Local: netip.AddrPortFrom(vip, 1026), Remote: netip.AddrPortFrom(client, 41001)},
			{Kind: "udp", Local: netip.AddrPortFrom(vip, 53)},
			{Kind: "udp-connected", Local: netip.AddrPortFrom(vip, 53), Remote: netip.AddrPortFrom(client, 41005)},
		},
		NextHops: []wiretest.NextHopVector{
			{Addr: serverA, Result: "redirect", DstMAC: "02:be:a0:00:01:10", SrcMAC: "02:be:a0:00:00:11"},
			{Addr: serverC, Result: "redirect", DstMAC: "02:be:a0:00:01:12", SrcMAC: "02:be:a0:00:00:11"},
			{Addr: netip.MustParseAddr("198.18.0.14"), Result: "no_neigh"},
			{Addr: netip.MustParseAddr("198.19.250.1"), Result: "no_route"},
		},
	}
	serverMAC := net.HardwareAddr{0x02, 0xbe, 0xa0, 0x00, 0x00, 0x11}
	frame := func(outer []byte) string {
		return hex.EncodeToString(wiretest.Frame(wiretest.MuxMAC, serverMAC, outer))
	}
	seg := func(dst netip.Addr, sport, dport uint16, flags int) wiretest.Segment {
		return wiretest.Segment{Flow: wire.Flow{Src: client, Dst: dst, SrcPort: sport, DstPort: dport, Proto: wire.ProtoTCP},
			Flags: flags, Seq: 5000, Ack: 6000, IPID: 9, Payload: []byte("x")}
	}
	enc := func(src, dst netip.Addr, inner []byte, opt *wire.Option) []byte {
		b, err := wire.Encapsulate(inner, src, dst, opt)
		if err != nil {
			panic(err)
		}
		return b
	}
	opt := func(prev []netip.Addr, changed, gen uint32, hop uint8) *wire.Option {
		return &wire.Option{Prev: prev, Changed: changed, Generation: gen, Incarnation: inc1, Hop: hop}
	}
	inc := func(o *wire.Option, i uint32) *wire.Option { o.Incarnation = i; return o }
	fromMux := func(inner []byte, o *wire.Option) string { return frame(enc(muxAddr, serverB, inner, o)) }
	with := func(b []byte, f func([]byte)) []byte { c := append([]byte(nil), b...); f(c); return c }
	// withOuter edits an outer IPv4 header and puts its checksum right
	// again, so that the edit is what the agent judges.
	withOuter := func(b []byte, f func([]byte)) []byte {
		c := with(b, f)
		if hl := int(c[0]&0x0f) * 4; hl >= 20 && hl <= len(c) {
			c[10], c[11] = 0, 0
			binary.BigEndian.PutUint16(c[10:], wire.Checksum(c[:hl]))
		}
		return c
	}
	stray := seg(vip, 42000, 80, wiretest.ACK).IPv4()  // mid-connection packet unknown to B
	stray2 := seg(vip, 42001, 80, wiretest.ACK).IPv4() // another one
	stray3 := seg(vip, 42002, 80, wiretest.ACK).IPv4() // and another
	A := []netip.Addr{serverA}
	var none []netip.Addr
	open := uint32(agentNow - 10)
	closed := uint32(agentNow - 241)
	addrs := func(a ...netip.Addr) []netip.Addr { return a }

	// A client port whose flow lands in the same bucket as stray's.
	strayBucket := wire.Flow{Src: client, Dst: vip, SrcPort: 42000, DstPort: 80, Proto: 6}.Bucket(16)
	sameBucket := uint16(0)
	for p := uint16(43000); sameBucket == 0; p++ {
		if (wire.Flow{Src: client, Dst: vip, SrcPort: p, DstPort: 80, Proto: 6}).Bucket(16) == strayBucket {
			sameBucket = p
		}
	}
	otherBucket := uint16(0)
	for p := uint16(44000); otherBucket == 0; p++ {
		if (wire.Flow{Src: client, Dst: vip, SrcPort: p, DstPort: 80, Proto: 6}).Bucket(16) != strayBucket {
			otherBucket = p
		}
	}
	dgram := func(sport uint16) []byte {
		return wiretest.Datagram{Flow: wire.Flow{Src: client, Dst: vip, SrcPort: sport, DstPort: 53}, Payload: []byte("query"), IPID: 9}.IPv4()
	}
	// UDP options end with the current owner (serverB here), flag RETURN.
	udpOpt := func(prev []netip.Addr, changed, gen uint32, hop uint8) *wire.Option {
		o := opt(append(append([]netip.Addr(nil), prev...), serverB), changed, gen, hop)
		if len(prev) > 0 && prev[len(prev)-1] == serverB {
			o.Prev = prev
		}
		o.Flags = wire.FlagReturn
		return o
	}
	// The newest state by the time the issue-17 cases run (after the
	// incarnation cases above).
	latest := func(o *wire.Option) *wire.Option { o.Incarnation, o.Generation = inc2, 2; return o }
	// A router's frag needed about the server's reply VIP:port -> client:cport.
	router := netip.MustParseAddr("198.18.9.1")
	fragNeeded := func(cport uint16) []byte {
		reply := wiretest.Segment{Flow: wire.Flow{Src: vip, Dst: client, SrcPort: 80, DstPort: cport, Proto: wire.ProtoTCP},
			Flags: wiretest.ACK, Payload: make([]byte, 1400)}.IPv4()
		return wiretest.ICMPv4(router, vip, 3, 4, [4]byte{0, 0, 0x05, 0xdc}, reply[:28])
	}
	fragNeededUDP := func(cport uint16) []byte {
		reply := wiretest.Datagram{Flow: wire.Flow{Src: vip, Dst: client, SrcPort: 53, DstPort: cport}, Payload: make([]byte, 1400)}.IPv4()
		return wiretest.ICMPv4(router, vip, 3, 4, [4]byte{0, 0, 0x05, 0xdc}, reply[:28])
	}
	plainTCP := wiretest.Frame(wiretest.MuxMAC, serverMAC, seg(serverB, 42000, 22, wiretest.ACK).IPv4())

	cases := []wiretest.PacketCase{
		{Name: "plain traffic to the server passes untouched", Input: hex.EncodeToString(plainTCP)},
		{Name: "ip-in-ip to another address passes", Input: frame(enc(muxAddr, netip.MustParseAddr("198.18.0.99"), stray, opt(A, open, 5, 0)))},
		{Name: "untrusted source is dropped", Input: frame(enc(netip.MustParseAddr("198.18.9.1"), serverB, stray, opt(A, open, 5, 0)))},
		{Name: "syn is kept", Input: fromMux(seg(vip, 42010, 80, wiretest.SYN).IPv4(), opt(A, open, 5, 0))},
		{Name: "syn without listener is kept for the stack to refuse", Input: fromMux(seg(vip, 42010, 81, wiretest.SYN).IPv4(), opt(none, 0, 5, 0))},
		{Name: "packet of a local connection is kept", Input: fromMux(seg(vip, 41000, 80, wiretest.ACK).IPv4(), opt(A, open, 5, 0))},
		{Name: "stray packet in open window is chained to previous server with hop 1", Input: fromMux(stray, opt(A, open, 5, 0))},
		{Name: "stray packet at the end of its list is not chained again: stack resets", Input: fromMux(stray, opt(A, open, 5, 1))},
		{Name: "same bucket with older change time still chains: highest time seen counts", Input: fromMux(seg(vip, sameBucket, 80, wiretest.ACK).IPv4(), opt(A, closed, 5, 0))},
		{Name: "other bucket with closed window is not chained: stack resets", Input: fromMux(seg(vip, otherBucket, 80, wiretest.ACK).IPv4(), opt(A, closed, 5, 0))},
		{Name: "newer generation raises the newest seen", Input: fromMux(stray2, opt(none, 0, 6, 0))},
		{Name: "stale generation without chaining is dropped", Input: fromMux(seg(vip, otherBucket, 80, wiretest.ACK).IPv4(), opt(A, closed, 5, 0))},
		{Name: "stale generation but a local connection's packet is kept", Input: fromMux(seg(vip, 41000, 80, wiretest.ACK).IPv4(), opt(none, 0, 5, 0))},
		{Name: "local connection at the newest generation goes to the stack without a lookup", Input: fromMux(seg(vip, 41000, 80, wiretest.ACK).IPv4(), opt(none, 0, 6, 0))},
		{Name: "stale generation in open window still chains", Input: fromMux(stray, opt(A, open, 4, 0))},
		{Name: "previous server is this server: not chained", Input: fromMux(stray2, opt(addrs(serverB), open, 6, 0))},
		{Name: "this server first in the list is skipped: chained to the next with hop 2", Input: fromMux(stray2, opt(addrs(serverB, serverC), open, 6, 0))},
		{Name: "chained from the new owner at hop 1: on to the older owner with hop 2", Input: frame(enc(serverA, serverB, stray3, opt(addrs(serverB, serverC), open, 6, 1)))},
		{Name: "second of three owners at hop 1 chains to the third with hop 3", Input: frame(enc(serverA, serverB, stray3, opt(addrs(serverA, serverB, serverC), open, 6, 1)))},
		{Name: "last owner of the list resets at the newest generation", Input: frame(enc(serverC, serverB, stray3, opt(addrs(serverA, serverC, serverB), open, 6, 3)))},
		{Name: "six previous owners (IHL 15) chain to the first", Input: fromMux(stray3, opt(addrs(serverA, serverC, netip.MustParseAddr("198.18.0.20"), netip.MustParseAddr("198.18.0.21"), netip.MustParseAddr("198.18.0.22"), netip.MustParseAddr("198.18.0.23")), open, 6, 0))},
		{Name: "vip without chaining resets at current generation", Input: fromMux(seg(vip2, 42000, 80, wiretest.ACK).IPv4(), opt(A, open, 6, 0))},
		{Name: "mptcp subflow of a local connection is kept", Input: frame(enc(muxAddr, serverB, seg(vip, 41001, 1026, wiretest.ACK).IPv4(), nil))},
		{Name: "mptcp subflow unknown here goes to the stack", Input: frame(enc(muxAddr, serverB, seg(vip, 41002, 1026, wiretest.ACK).IPv4(), nil))},
		{Name: "chain towards unresolved neighbour lets the kernel resolve it", Input: fromMux(stray2, opt(addrs(netip.MustParseAddr("198.18.0.14")), open, 6, 0))},
		{Name: "chain towards unroutable server is dropped", Input: fromMux(stray2, opt(addrs(netip.MustParseAddr("198.19.250.1")), open, 6, 0))},
		{Name: "chained packet from a fellow server is reset at current generation", Input: frame(enc(serverA, serverB, stray2, opt(addrs(serverB), open, 6, 1)))},
		{Name: "change time far in the future is clamped, the packet still chains", Input: fromMux(stray2, opt(A, agentNow+100000, 6, 0))},
		{Name: "generation jump beyond the bound is not remembered: stray dropped as stale", Input: fromMux(stray3, opt(none, 0, 6+agentJump+1, 0))},
		{Name: "after the refused jump generation 6 is still the newest", Input: fromMux(stray3, opt(none, 0, 6, 0))},
		{Name: "incarnation ahead of the clock is not remembered: stray dropped as stale", Input: fromMux(stray3, inc(opt(none, 0, 1, 0), agentNow+agentSkew+1000))},
		{Name: "after the refused incarnation generation 6 is still the newest", Input: fromMux(stray3, opt(none, 0, 6, 0))},
		{Name: "newer incarnation is a reset, not stale: generation 1 is the newest now", Input: fromMux(stray3, inc(opt(none, 0, 1, 0), inc2))},
		{Name: "a mux still on the older incarnation is stale", Input: fromMux(stray3, opt(none, 0, 7, 0))},
		{Name: "newer incarnation's next generation is the newest", Input: fromMux(stray3, inc(opt(none, 0, 2, 0), inc2))},
		{Name: "hop past the list is a bad option", Input: fromMux(stray, opt(A, open, 6, 2))},
		{Name: "option length that disagrees with the header length is dropped", Input: frame(withOuter(enc(muxAddr, serverB, stray, opt(A, open, 6, 0)), func(b []byte) { b[21] = 16 }))},
		{Name: "unknown option type is dropped", Input: frame(withOuter(enc(muxAddr, serverB, stray, opt(A, open, 6, 0)), func(b []byte) { b[20] = 0x44 }))},
		{Name: "outer header of 24 bytes is dropped", Input: frame(withOuter(enc(muxAddr, serverB, stray, opt(A, open, 6, 0)), func(b []byte) { b[0] = 0x46 }))},
		{Name: "outer header claiming 60 bytes over a 40-byte option is dropped", Input: frame(withOuter(enc(muxAddr, serverB, stray, opt(A, open, 6, 0)), func(b []byte) { b[0] = 0x4f }))},
		{Name: "outer fragment is dropped", Input: frame(withOuter(enc(muxAddr, serverB, stray, opt(A, open, 6, 0)), func(b []byte) { b[6] = 0x20 }))},
		{Name: "outer total length beyond packet is dropped", Input: frame(withOuter(enc(muxAddr, serverB, stray, opt(A, open, 6, 0)), func(b []byte) { b[2], b[3] = 0x05, 0xdc }))},
		{Name: "inner protocol neither tcp, udp nor icmp is dropped", Input: fromMux(with(stray, func(b []byte) { b[9] = 47 }), opt(A, open, 6, 0))},
		// Issue 17: UDP and ICMP.
		{Name: "udp of a socket connected to the client is kept", Input: fromMux(dgram(41005), latest(udpOpt(A, open, 6, 0)))},
		{Name: "udp that only an unconnected socket takes is chained to the previous owner", Input: fromMux(dgram(41006), latest(udpOpt(A, open, 6, 0)))},
		{Name: "udp back at the current owner at the end of its list goes to the stack", Input: frame(enc(serverA, serverB, dgram(41006), latest(udpOpt(A, open, 6, 1))))},
		{Name: "udp at a previous owner without its socket goes on to the current owner", Input: frame(enc(serverC, serverB, dgram(41007), udpOpt(addrs(serverC, serverB, serverA), open, 6, 1)))},
		{Name: "udp to a bucket that never moved goes to the stack", Input: fromMux(dgram(41006), latest(opt(none, 0, 6, 0)))},
		{Name: "udp without option (quic by connection id) goes to the stack", Input: frame(enc(muxAddr, serverB, dgram(41008), nil))},
		{Name: "frag needed quoting a local connection is kept", Input: fromMux(fragNeeded(41000), latest(opt(A, open, 6, 0)))},
		{Name: "frag needed quoting a connection unknown here is chained", Input: fromMux(fragNeeded(42000), latest(opt(A, open, 6, 0)))},
		{Name: "frag needed quoting a udp flow of a connected socket is kept", Input: fromMux(fragNeededUDP(41005), latest(udpOpt(A, open, 6, 0)))},
		{Name: "inner echo request is dropped", Input: fromMux(wiretest.ICMPv4(client, vip, 8, 0, [4]byte{}, []byte("ping")), latest(opt(A, open, 6, 0)))},
		{Name: "inner frag needed quoting another address is dropped", Input: fromMux(wiretest.ICMPv4(serverC, vip, 3, 4, [4]byte{0, 0, 5, 0xdc}, seg(serverC, 80, 42000, wiretest.ACK).IPv4()[:28]), latest(opt(A, open, 6, 0)))},
		{Name: "inner ip options are dropped", Input: fromMux(with(stray, func(b []byte) { b[0] = 0x46 }), opt(A, open, 6, 0))},
		{Name: "inner tcp cut short is dropped", Input: fromMux(with(stray, func(b []byte) { b[32] = 0xf0 }), opt(A, open, 6, 0))},
		{Name: "unknown vip is dropped", Input: fromMux(seg(netip.MustParseAddr("198.18.100.77"), 42000, 80, wiretest.ACK).IPv4(), opt(A, open, 6, 0))},
		// Issue 23: packet checks. At the newest state, so that nothing
		// before them is moved by them.
		{Name: "wrong outer checksum on a packet to chain is dropped", Input: frame(with(enc(muxAddr, serverB, stray2, latest(opt(A, open, 6, 0))), func(b []byte) { b[10] ^= 0x40 }))},
		{Name: "wrong outer checksum on a syn to keep is dropped", Input: frame(with(enc(muxAddr, serverB, seg(vip, 42011, 80, wiretest.SYN).IPv4(), latest(opt(A, open, 6, 0))), func(b []byte) { b[10] ^= 0x40 }))},
		{Name: "wrong outer checksum on a packet for the stack is dropped", Input: frame(with(enc(muxAddr, serverB, seg(vip, 41000, 80, wiretest.ACK).IPv4(), latest(opt(none, 0, 6, 0))), func(b []byte) { b[10] ^= 0x40 }))},
		{Name: "wrong checksum of an outer header without option is dropped", Input: frame(with(enc(muxAddr, serverB, seg(vip, 41001, 1026, wiretest.ACK).IPv4(), nil), func(b []byte) { b[10] ^= 0x40 }))},
		{Name: "corrupted previous owner (checksum now wrong) is not chained to", Input: frame(with(enc(muxAddr, serverB, stray2, latest(opt(A, open, 6, 0))), func(b []byte) { b[39] ^= 0x80 }))},
		{Name: "previous owner outside the trusted prefixes is not chained to", Input: fromMux(stray2, latest(opt(addrs(netip.MustParseAddr("198.19.200.200")), open, 6, 0)))},
		{Name: "untrusted previous owner after this server is not chained to either", Input: fromMux(stray2, latest(opt(addrs(serverB, netip.MustParseAddr("203.0.113.9")), open, 6, 0)))},
		{Name: "previous owner in the second trusted prefix passes the relay rule (no route to it here)", Input: fromMux(stray2, latest(opt(addrs(netip.MustParseAddr("198.19.250.1")), open, 6, 0)))},
	}
	return s, cases
}

// modelAgent builds the reference agent for a scenario.
func modelAgent(s *wiretest.AgentScenario) *Agent {
	a := &Agent{Addr: s.Addr, VIPs: map[netip.Addr]AgentVIP{}, Trusted: s.Trusted, Now: s.Now, GUEPorts: s.GUEPorts,
		MaxSkew: s.MaxSkew, MaxGenJump: s.MaxGenJump, Changed: map[[2]uint32]uint32{}}
	for i, v := range s.VIPs {
		a.VIPs[v.VIP] = AgentVIP{Buckets: v.Buckets, Window: v.Window, Slot: uint32(i)}
	}
	a.UDPSocket = func(c, v netip.AddrPort) Socket {
		found := NoSocket
		for _, sk := range s.Sockets {
			if sk.Local != v {
				continue
			}
			if sk.Kind == "udp-connected" && sk.Remote == c {
				return Connection
			}
			if sk.Kind == "udp" {
				found = Listener
			}
		}
		return found
	}
	a.Socket = func(c, v netip.AddrPort) Socket {
		found := NoSocket
		for _, sk := range s.Sockets {
			if sk.Local != v {
				continue
			}
			if sk.Kind == "connection" && sk.Remote == c {
				return Connection
			}
			if sk.Kind == "listen" {
				found = Listener
			}
		}
		return found
	}
	hops := map[netip.Addr]NextHop{}
	for _, h := range s.NextHops {
		d, _ := net.ParseMAC(h.DstMAC)
		sm, _ := net.ParseMAC(h.SrcMAC)
		hops[h.Addr] = NextHop{Result: h.Result, DstMAC: d, SrcMAC: sm}
	}
	a.NextHops = func(x netip.Addr) NextHop {
		if h, ok := hops[x]; ok {
			return h
		}
		return NextHop{Result: "no_route"}
	}
	return a
}

func runAgentCase(a *Agent, c *wiretest.PacketCase) error {
	in, err := hex.DecodeString(c.Input)
	if err != nil {
		return err
	}
	r := a.Process(in)
	c.Action, c.Counter, c.Output = string(r.Action), r.Counter, ""
	if r.Action != Drop {
		c.Output = hex.EncodeToString(r.Output)
	}
	return nil
}

func checkAgentVectors(t *testing.T, v *wiretest.Vectors) {
	a := modelAgent(&v.Agent)
	for _, want := range v.Agent.Cases {
		got := want
		if err := runAgentCase(a, &got); err != nil {
			t.Fatal(err)
		}
		if got.Action != want.Action || got.Counter != want.Counter || got.Output != want.Output {
			t.Errorf("agent %s: model %s/%s, vector %s/%s\nmodel  %s\nvector %s", want.Name, got.Action, got.Counter, want.Action, want.Counter, got.Output, want.Output)
		}
	}
}
