package model

import (
	"encoding/binary"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// Socket is what a socket lookup finds for a packet's 4-tuple.
type Socket int

const (
	NoSocket   Socket = iota
	Listener          // a listening socket on the service port
	Connection        // an established (or otherwise non-listening) socket
)

// AgentVIP is one VIP the agent serves.
type AgentVIP struct {
	Buckets uint32
	Window  uint32 // seconds; 0 = no chaining
	Slot    uint32 // index of its generation counter
}

// Agent is the reference server agent (bpf/agent.c).
type Agent struct {
	Addr    netip.Addr
	VIPs    map[netip.Addr]AgentVIP
	Trusted []netip.Prefix
	// Socket looks up the local socket for client → vip.
	Socket func(client, vip netip.AddrPort) Socket
	// UDPSocket looks up the local UDP socket for client → vip: Connection
	// for a socket connected to the client, Listener for one only bound
	// (nil: none).
	UDPSocket func(client, vip netip.AddrPort) Socket
	// CookieValid says whether an ACK to a listener carries a valid SYN cookie.
	CookieValid func(inner []byte) bool
	NextHops    func(netip.Addr) NextHop
	Now         uint32 // Unix seconds
	// Sanity bounds (bpf/agent.c): how far the controller's clock may lead
	// ours (seconds), and a generation the remembered one.
	MaxSkew    uint32
	MaxGenJump uint32
	// Seen holds per VIP slot the newest (incarnation << 32 | generation)
	// of the current and the previous memory period; Cur says which word
	// is current (Rotate flips it).
	Seen    map[uint32]*[2]uint64
	Cur     int
	Changed map[[2]uint32]uint32 // (slot, bucket) → latest change time seen
	// GUEPorts are the UDP ports GUE arrives on besides
	// wire.GUEDefaultPort, always (pkg/dataplane AgentOptions.GUEPorts).
	GUEPorts []uint16
}

// guePort mirrors gue_ports (bpf/include/gue_agent.h).
func (a *Agent) guePort(p uint16) bool {
	if p == wire.GUEDefaultPort {
		return true
	}
	for _, q := range a.GUEPorts {
		if q == p {
			return true
		}
	}
	return false
}

// isGUE mirrors gue4_udp: UDP in a 20-byte IPv4 header to a GUE port.
func (a *Agent) isGUE(frame []byte) bool {
	ip := frame[14:]
	return ip[9] == wire.ProtoUDP && ip[0]&0x0f == 5 && len(ip) >= 28 && a.guePort(binary.BigEndian.Uint16(ip[22:]))
}

// gueOuter mirrors gue4_parse: the outer length (IPv4 + UDP + GUE +
// private data) and the option, or a drop counter.
func gueOuter(outer []byte, outerTot int) (int, *wire.Option, string) {
	if len(outer) < wire.GUEPlain4 {
		return 0, nil, "drop_truncated"
	}
	if int(binary.BigEndian.Uint16(outer[24:])) != outerTot-20 {
		return 0, nil, "drop_bad_header"
	}
	g := outer[28:32]
	if g[0]&0x1f == 0 {
		if g[0] != 0 || g[1] != wire.ProtoIPIP || g[2] != 0 || g[3] != 0 {
			return 0, nil, "drop_bad_option"
		}
		return wire.GUEPlain4, nil, ""
	}
	if len(outer) < wire.GUEMax4 {
		return 0, nil, "drop_truncated" // valid packets hold 72 bytes past the outer start
	}
	priv := int(g[0]&0x1f) * 4
	if g[0]>>5 != 0 || g[1] != wire.ProtoIPIP || g[2] != 0 || g[3] != 0 || priv > wire.OptionMax {
		return 0, nil, "drop_bad_option"
	}
	o, err := wire.ParseOption(outer[wire.GUEPlain4 : wire.GUEPlain4+priv])
	if err != nil {
		return 0, nil, "drop_bad_option"
	}
	return wire.GUEPlain4 + priv, &o, ""
}

// CsumMaxBytes mirrors CSUM_MAX_BYTES (bpf/include/csum.h): the most
// bytes a checksum is verified over; longer is refused as unverifiable.
const CsumMaxBytes = 4096

// gueUDPChecksumOK mirrors gue_udp_csum_ok: a UDP checksum of 0 is none;
// any other must be right over the pseudo-header and the datagram (the
// outer IPv4 packet's bytes after its 20-byte header).
func gueUDPChecksumOK(outer []byte) bool {
	udp := outer[20:]
	if binary.BigEndian.Uint16(udp[6:]) == 0 {
		return true
	}
	if len(udp) > CsumMaxBytes {
		return false
	}
	return wire.PseudoChecksum(netip.AddrFrom4([4]byte(outer[12:16])), netip.AddrFrom4([4]byte(outer[16:20])), wire.ProtoUDP, udp) == 0
}

// Rotate starts a new memory period (pkg/dataplane Agent.Rotate).
func (a *Agent) Rotate() {
	a.Cur ^= 1
	for _, w := range a.Seen {
		w[a.Cur] = 0
	}
}

// Newest is the newest (incarnation << 32 | generation) remembered for slot.
func (a *Agent) Newest(slot uint32) uint64 {
	if w := a.Seen[slot]; w != nil {
		return max(w[0], w[1])
	}
	return 0
}

func (a *Agent) trusted(src netip.Addr) bool {
	for _, p := range a.Trusted {
		if p.Contains(src) {
			return true
		}
	}
	return false
}

// decap is the frame as the stack gets it: Ethernet header, then what
// followed the outer header.
func decap(frame []byte, outerLen int, counter string) Result {
	out := append(append([]byte(nil), frame[:14]...), frame[14+outerLen:]...)
	return Result{Action: Pass, Counter: counter, Output: out}
}

// Process runs the agent algorithm on one Ethernet frame.
func (a *Agent) Process(frame []byte) Result {
	if len(frame) < 14+20 || binary.BigEndian.Uint16(frame[12:]) != 0x0800 || (frame[14+9] != wire.ProtoIPIP && !a.isGUE(frame)) {
		return Result{Action: Pass, Counter: "pass_not_encap", Output: frame}
	}
	gue := frame[14+9] == wire.ProtoUDP
	outer := frame[14:]
	if netip.AddrFrom4([4]byte(outer[16:20])) != a.Addr {
		return Result{Action: Pass, Counter: "pass_not_for_us", Output: frame}
	}
	if !a.trusted(netip.AddrFrom4([4]byte(outer[12:16]))) {
		return drop("drop_untrusted")
	}
	// The outer header's checksum, before any field of it is believed
	// (ipv4_csum_wrong); a header too short or cut off is judged below.
	if hl := int(outer[0]&0x0f) * 4; hl >= 20 && hl <= len(outer) && wire.Checksum(outer[:hl]) != 0 {
		return drop("drop_bad_checksum")
	}
	if outer[0]>>4 != 4 {
		return drop("drop_bad_header")
	}
	if binary.BigEndian.Uint16(outer[6:])&0x3fff != 0 {
		return drop("drop_fragment")
	}
	outerTot := int(binary.BigEndian.Uint16(outer[2:]))
	if outerTot > len(outer) {
		return drop("drop_truncated")
	}
	var opt *wire.Option
	outerLen := int(outer[0]&0x0f) * 4
	switch {
	case gue:
		var c string
		if outerLen, opt, c = gueOuter(outer, outerTot); c != "" {
			return drop(c)
		}
		if !gueUDPChecksumOK(outer[:outerTot]) {
			return drop("drop_bad_udp_checksum")
		}
	case outerLen > wire.OuterPlain:
		if len(outer) < wire.OuterMax {
			return drop("drop_truncated") // valid packets hold 60 bytes past the outer start
		}
		if outerLen < wire.OuterWithOp {
			return drop("drop_bad_option")
		}
		o, err := wire.ParseOption(outer[20:outerLen])
		if err != nil {
			return drop("drop_bad_option")
		}
		opt = &o
	case outerLen == wire.OuterPlain:
	default:
		return drop("drop_bad_option")
	}
	ip := outer[outerLen:]
	if len(ip) < 20 {
		return drop("drop_truncated")
	}
	if outerTot < outerLen {
		return drop("drop_bad_header")
	}
	if c := checkIPv4Plain(ip, outerTot-outerLen); c != "" {
		if c == "drop_ip_options" {
			c = "drop_inner_options"
		}
		return drop(c)
	}
	// The inner flow: TCP, UDP, or the connection an ICMP frag needed quotes.
	var p modelspi.Packet
	if ip[9] == wire.ProtoICMP {
		kind, f := icmpClassify(ip)
		if kind != icmpFragNeeded {
			return drop("drop_icmp")
		}
		p = modelspi.Packet{Flow: f}
	} else {
		var c string
		if p, c = parseFlow(ip, netip.AddrFrom4([4]byte(ip[16:20]))); c != "" {
			return drop(c)
		}
	}
	client := netip.AddrPortFrom(p.Flow.Src, p.Flow.SrcPort)
	vipAP := netip.AddrPortFrom(p.Flow.Dst, p.Flow.DstPort)
	vip, ok := a.VIPs[vipAP.Addr()]
	if !ok {
		return drop("drop_unknown_vip")
	}

	var syn, ack, rst bool
	if p.TCP != nil {
		flags := p.TCP[13]
		syn, ack, rst = flags&0x02 != 0, flags&0x10 != 0, flags&0x04 != 0
	}
	if syn && !ack {
		return decap(frame, outerLen, "local_syn")
	}
	if opt == nil {
		return decap(frame, outerLen, "stack_no_option")
	}

	// The newest (incarnation, generation) remembered, raised by this
	// packet unless a sanity bound refuses it.
	if a.Seen == nil {
		a.Seen = map[uint32]*[2]uint64{}
	}
	if a.Seen[vip.Slot] == nil {
		a.Seen[vip.Slot] = &[2]uint64{}
	}
	epoch, newest := opt.Epoch(), a.Newest(vip.Slot)
	accepted := true
	if epoch > newest {
		switch {
		case epoch>>32 > newest>>32:
			if uint64(opt.Incarnation) > uint64(a.Now)+uint64(a.MaxSkew) {
				accepted = false // "future_incarnation"
			}
		case newest != 0 && uint32(epoch)-uint32(newest) > a.MaxGenJump:
			accepted = false // "suspicious_generation"
		}
		if accepted {
			w := a.Seen[vip.Slot]
			w[a.Cur] = max(w[a.Cur], epoch)
			newest = a.Newest(vip.Slot)
		}
	}
	isNewest := accepted && epoch == newest

	// The first previous owner at or after hop that is not this server.
	next := -1
	if vip.Window != 0 {
		for i := int(opt.Hop); i < len(opt.Prev); i++ {
			if opt.Prev[i] != a.Addr {
				next = i
				break
			}
		}
	}
	chainable := false
	if next >= 0 {
		changed := opt.Changed
		if uint64(changed) > uint64(a.Now)+uint64(a.MaxSkew) {
			changed = a.Now + a.MaxSkew // "clamped_change"
		}
		key := [2]uint32{vip.Slot, p.Flow.Bucket(vip.Buckets)}
		if changed > a.Changed[key] {
			a.Changed[key] = changed
		}
		chainable = uint64(a.Now) < uint64(a.Changed[key])+uint64(vip.Window)
	}
	// Nothing to chain at the newest state: to the stack, no lookup.
	if !chainable && isNewest {
		return decap(frame, outerLen, "to_stack")
	}
	if p.Flow.Proto == wire.ProtoUDP {
		// Only a socket connected to the client proves the flow is ours.
		if a.UDPSocket != nil && a.UDPSocket(client, vipAP) == Connection {
			return decap(frame, outerLen, "local_socket")
		}
	} else {
		switch a.Socket(client, vipAP) {
		case Connection:
			return decap(frame, outerLen, "local_socket")
		case Listener:
			if p.TCP != nil && ack && !syn && !rst && a.CookieValid != nil && a.CookieValid(ip) {
				return decap(frame, outerLen, "local_cookie")
			}
		}
	}
	if chainable {
		return a.chain(frame, outerLen, opt, next, gue)
	}
	return drop("drop_stale_generation")
}

// chain rewrites the outer header towards the previous owner opt.Prev[next],
// with hop next+1.
func (a *Agent) chain(frame []byte, outerLen int, opt *wire.Option, next int, gue bool) Result {
	to := opt.Prev[next]
	// The relay rule (owner_trusted): only to a previous owner inside the
	// trusted prefixes.
	if !a.trusted(to) {
		return drop("drop_untrusted_owner")
	}
	nh := a.NextHops(to)
	if nh.Result != "tx" && nh.Result != "redirect" && nh.Result != "no_neigh" {
		return drop("drop_chain_no_route")
	}
	out := append([]byte(nil), frame...)
	h := out[14 : 14+outerLen]
	src, dst := a.Addr.As4(), to.As4()
	copy(h[12:16], src[:])
	copy(h[16:20], dst[:])
	h[8] = wire.OuterTTL
	h[10], h[11] = 0, 0
	if gue {
		// GUE keeps its encapsulation and UDP source port: the hop
		// byte of the private data, a UDP checksum of 0, the IPv4
		// header's checksum over its 20 bytes.
		h[26], h[27] = 0, 0
		h[wire.GUEPlain4+2] = byte(next + 1)
		binary.BigEndian.PutUint16(h[10:], wire.Checksum(h[:20]))
	} else {
		h[22] = byte(next + 1)
		binary.BigEndian.PutUint16(h[10:], wire.Checksum(h))
	}
	if nh.Result != "no_neigh" {
		copy(out[0:6], nh.DstMAC)
		copy(out[6:12], nh.SrcMAC)
	}
	return Result{Action: Redirect, Counter: "chained", Output: out}
}
