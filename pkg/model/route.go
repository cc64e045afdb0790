package model

import (
	"encoding/binary"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// route mirrors route() in bpf/mux.c: the server-id range for TCP, then
// the VIP's service ports per protocol, then (UDP on a QUIC instance) the
// server id in the connection id, then the strategy.
func (m *Mux) route(vip *VIP, p modelspi.Packet, ip []byte, quic bool) (forwarding.Server, *wire.Option, string, bool) {
	in := &vip.Instance
	proto := forwarding.TCP
	if p.Flow.Proto == wire.ProtoUDP {
		proto = forwarding.UDP
	}
	if proto == forwarding.TCP && in.ServerIDs().Contains(p.Flow.DstPort) {
		s, ok := vip.Table.Servers[forwarding.ServerID(p.Flow.DstPort)]
		if !ok {
			return s, nil, "drop_unknown_server", false
		}
		return s, nil, "fwd_server_id", true
	}
	if !in.PortsOf(p.Flow.Dst).Open(proto, p.Flow.DstPort) {
		return forwarding.Server{}, nil, "drop_closed_port", false
	}
	strat, ok := modelspi.Lookup(in.Strategy)
	if !ok {
		return forwarding.Server{}, nil, "drop_bad_strategy", false
	}
	if quic && proto == forwarding.UDP && in.QUIC != nil && in.QUIC.QUICPorts().Contains(p.Flow.DstPort) {
		if id, ok := quicServerID(in.QUIC, ip[28:]); ok {
			if s, ok := vip.Table.Servers[id]; ok {
				return s, nil, "fwd_quic_cid", true
			}
		}
	}
	return decide(strat, m, vip, p)
}

// quicServerID mirrors quic_server_id (bpf/include/quic.h): the server id
// of the QUIC-LB plaintext CID at the start of the packet's DCID.
func quicServerID(q *forwarding.QUICOptions, b []byte) (forwarding.ServerID, bool) {
	if len(b) < 9 {
		return 0, false
	}
	var cid []byte
	if b[0]&0x80 != 0 {
		if b[1]|b[2]|b[3]|b[4] == 0 || b[5] != q.CIDLen {
			return 0, false
		}
		cid = b[6:]
	} else {
		if b[0]&0x40 == 0 {
			return 0, false
		}
		cid = b[1:]
	}
	if cid[0] != q.ConfigID<<5|(q.CIDLen-1)&0x1f {
		return 0, false
	}
	return forwarding.ServerID(binary.BigEndian.Uint16(cid[1:])), true
}

type icmpKind int

const (
	icmpOther icmpKind = iota
	icmpEcho
	icmpFragNeeded
	icmpBadQuote
)

// icmpClassify mirrors icmp_classify (bpf/include/icmp_steer.h).
func icmpClassify(ip []byte) (icmpKind, wire.Flow) {
	tot := int(binary.BigEndian.Uint16(ip[2:]))
	if len(ip) < 28 || tot < 28 {
		return icmpOther, wire.Flow{}
	}
	t, code := ip[20], ip[21]
	if t == 8 && code == 0 {
		return icmpEcho, wire.Flow{}
	}
	if t != 3 || code != 4 {
		return icmpOther, wire.Flow{}
	}
	if len(ip) < 52 || tot < 52 {
		return icmpBadQuote, wire.Flow{}
	}
	q := ip[28:]
	if q[0] != 0x45 || [4]byte(q[12:16]) != [4]byte(ip[16:20]) || (q[9] != wire.ProtoTCP && q[9] != wire.ProtoUDP) {
		return icmpBadQuote, wire.Flow{}
	}
	return icmpFragNeeded, wire.Flow{Src: netip.AddrFrom4([4]byte(q[16:20])), Dst: netip.AddrFrom4([4]byte(q[12:16])),
		SrcPort: binary.BigEndian.Uint16(q[22:]), DstPort: binary.BigEndian.Uint16(q[20:]), Proto: q[9]}
}

// echoReply mirrors xdp_echo_reply: the request turned into its reply.
func echoReply(frame []byte) []byte {
	out := append([]byte(nil), frame...)
	copy(out[0:6], frame[6:12])
	copy(out[6:12], frame[0:6])
	ip := out[14:]
	copy(ip[12:16], frame[14+16:14+20])
	copy(ip[16:20], frame[14+12:14+16])
	ip[8] = 64
	ip[10], ip[11] = 0, 0
	binary.BigEndian.PutUint16(ip[10:], wire.Checksum(ip[:20]))
	icmp := ip[20:]
	old := binary.BigEndian.Uint16(icmp[0:])
	icmp[0] = 0
	// RFC 1624 eqn. 3, as the C program computes it.
	sum := uint32(^binary.BigEndian.Uint16(icmp[2:])) + uint32(^old) + uint32(binary.BigEndian.Uint16(icmp[0:]))
	sum = sum&0xffff + sum>>16
	sum = sum&0xffff + sum>>16
	binary.BigEndian.PutUint16(icmp[2:], ^uint16(sum))
	return out
}
