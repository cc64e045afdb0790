package model

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// Action is what a program did with a packet.
type Action string

const (
	Pass     Action = "pass"     // to the local stack
	Drop     Action = "drop"     // dropped (and counted)
	TX       Action = "tx"       // back out of the interface it came in on
	Redirect Action = "redirect" // out of another interface
)

// NextHop is what a route lookup towards a server gives.
type NextHop struct {
	Result string           `json:"result"` // "tx", "redirect", "no_neigh", "no_route"
	DstMAC net.HardwareAddr `json:"-"`
	SrcMAC net.HardwareAddr `json:"-"`
}

// Result of processing one packet.
type Result struct {
	Action  Action
	Counter string // the decision counter the program increments
	Output  []byte // the frame as it leaves (nil for drop; input for pass)
}

// VIP is one VIP as the mux sees it.
type VIP = modelspi.VIP

// Mux is the reference mux.
type Mux struct {
	Addr     netip.Addr
	VIPs     map[netip.Addr]*VIP
	NextHops func(netip.Addr) NextHop
	// ConnTrack is the Maglev and AWFD strategies' connection table. It
	// never forgets: the kernel's (bpf/include/conntrack.h, 4 entries a
	// bucket) evicts an entry when a bucket overflows, and the evicted
	// connection's next packet is a miss there (the Maglev table's entry,
	// remembered again) where the model still has a hit. Scenarios that
	// compare the two stay far below a bucket's worth of connections.
	ConnTrack map[wire.Flow]forwarding.ServerID
	// InsertBudget, when not nil, is how many more entries the flood guard
	// lets the connection table take.
	InsertBudget *int
	// RoundRobin is the cheetah strategy's position per instance (one CPU's).
	RoundRobin map[string]int
	// PrismLearned is the Prism strategy's SYN-learning table of this mux
	// (signature -> server), filled by SYNs in migrating bins.
	PrismLearned map[uint64]forwarding.ServerID
}

func drop(counter string) Result { return Result{Action: Drop, Counter: counter} }

// Process runs the mux algorithm on one Ethernet frame.
func (m *Mux) Process(frame []byte) Result {
	if len(frame) < 14+20 || binary.BigEndian.Uint16(frame[12:]) != 0x0800 {
		return Result{Action: Pass, Counter: "pass_not_ipv4", Output: frame}
	}
	ip := frame[14:]
	dst := netip.AddrFrom4([4]byte(ip[16:20]))
	vip, ok := m.VIPs[dst]
	if !ok {
		return Result{Action: Pass, Counter: "pass_not_vip", Output: frame}
	}
	if c := checkIPv4Plain(ip, len(ip)); c != "" {
		return drop(c)
	}
	var p modelspi.Packet
	icmp := false
	if ip[9] == wire.ProtoICMP {
		// ICMP to a VIP (bpf/include/icmp_steer.h): echo by policy, a
		// frag needed steered as the flow of the connection it quotes.
		kind, flow := icmpClassify(ip)
		switch kind {
		case icmpEcho:
			switch vip.Instance.ICMPEcho {
			case forwarding.EchoAnswer:
				// icmp_csum_ok: a request with a wrong checksum
				// (or too long to verify) is not answered.
				tot := int(binary.BigEndian.Uint16(ip[2:]))
				if tot-20 > CsumMaxBytes || wire.Checksum(ip[20:tot]) != 0 {
					return drop("drop_icmp_bad_checksum")
				}
				return Result{Action: TX, Counter: "icmp_echo_answered", Output: echoReply(frame)}
			case forwarding.EchoPass:
				return Result{Action: Pass, Counter: "pass_icmp_echo", Output: frame}
			}
			return drop("drop_icmp_echo")
		case icmpFragNeeded:
			p, icmp = modelspi.Packet{Flow: flow}, true
		default:
			return drop("drop_icmp")
		}
	} else {
		var c string
		if p, c = parseFlow(ip, dst); c != "" {
			return drop(c)
		}
	}
	server, opt, counter, ok := m.route(vip, p, ip, !icmp)
	if !ok {
		return drop(counter)
	}
	inner := ip[:binary.BigEndian.Uint16(ip[2:])]
	var outer []byte
	var err error
	if vip.Instance.EncapOf() == forwarding.EncapGUE {
		// GUE (bpf/include/gue.h): the UDP source port from the flow's
		// hash, the destination port the instance's.
		outer, err = wire.EncapsulateGUE(inner, m.Addr, server.Addr, wire.GUESourcePort(p.Flow.Hash()), vip.Instance.GUEPortOf(), opt)
	} else {
		outer, err = wire.Encapsulate(inner, m.Addr, server.Addr, opt)
	}
	if err != nil {
		return drop("drop_encap")
	}
	nh := m.NextHops(server.Addr)
	switch nh.Result {
	case "tx", "redirect":
	case "no_neigh":
		return drop("drop_no_neigh")
	default:
		return drop("drop_no_route")
	}
	out := make([]byte, 14, 14+len(outer)+len(ip)-len(inner))
	copy(out[0:6], nh.DstMAC)
	copy(out[6:12], nh.SrcMAC)
	out[12], out[13] = 0x08, 0x00
	out = append(out, outer...)
	out = append(out, ip[len(inner):]...) // Ethernet padding travels along
	act := TX
	if nh.Result == "redirect" {
		act = Redirect
	}
	return Result{Action: act, Counter: counter, Output: out}
}

// checkIPv4Plain mirrors check_ipv4_plain in bpf/include/parse.h; avail is
// how many bytes the packet holds from the start of this header.
func checkIPv4Plain(ip []byte, avail int) string {
	version, ihl := ip[0]>>4, ip[0]&0x0f
	if version != 4 || ihl < 5 {
		return "drop_bad_header"
	}
	if ihl != 5 {
		return "drop_ip_options"
	}
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if tot < 20 {
		return "drop_bad_header"
	}
	if tot > avail {
		return "drop_truncated"
	}
	if binary.BigEndian.Uint16(ip[6:])&0x3fff != 0 {
		return "drop_fragment"
	}
	return ""
}

// parseFlow mirrors parse_flow (bpf/include/flow.h): TCP or UDP.
func parseFlow(ip []byte, dst netip.Addr) (modelspi.Packet, string) {
	src := netip.AddrFrom4([4]byte(ip[12:16]))
	if ip[9] == wire.ProtoUDP {
		udp, c := udpAfter(ip)
		if c != "" {
			return modelspi.Packet{}, c
		}
		return modelspi.Packet{Flow: wire.Flow{Src: src, Dst: dst, SrcPort: binary.BigEndian.Uint16(udp[0:]),
			DstPort: binary.BigEndian.Uint16(udp[2:]), Proto: wire.ProtoUDP}, UDP: udp}, ""
	}
	tcp, c := tcpAfter(ip)
	if c != "" {
		return modelspi.Packet{}, c
	}
	return modelspi.Packet{Flow: wire.Flow{Src: src, Dst: dst, SrcPort: binary.BigEndian.Uint16(tcp[0:]),
		DstPort: binary.BigEndian.Uint16(tcp[2:]), Proto: wire.ProtoTCP}, SYN: tcp[13]&0x12 == 0x02, TCP: tcp}, ""
}

// udpAfter mirrors parse_udp_after.
func udpAfter(ip []byte) ([]byte, string) {
	if len(ip) < 28 {
		return nil, "drop_truncated"
	}
	l := int(binary.BigEndian.Uint16(ip[24:]))
	if l < 8 {
		return nil, "drop_bad_header"
	}
	if 20+l > int(binary.BigEndian.Uint16(ip[2:])) {
		return nil, "drop_truncated"
	}
	return ip[20:], ""
}

// tcpAfter mirrors parse_tcp_after.
func tcpAfter(ip []byte) ([]byte, string) {
	if ip[9] != wire.ProtoTCP {
		return nil, "drop_not_tcp"
	}
	if len(ip) < 40 {
		return nil, "drop_truncated"
	}
	doff := int(ip[32] >> 4)
	if doff < 5 {
		return nil, "drop_bad_header"
	}
	if 20+doff*4 > int(binary.BigEndian.Uint16(ip[2:])) {
		return nil, "drop_truncated"
	}
	return ip[20:], ""
}
