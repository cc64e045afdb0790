package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// GUE (draft-ietf-intarea-gue, version 0) as Beamer sends it
// (docs/wire-format.md "GUE", bpf/include/gue.h): outer IPv4 or IPv6, UDP
// with checksum 0, a 4-byte GUE header whose private data is exactly the
// Beamer option's bytes (previous owners as 4-byte addresses over IPv4, 16-
// byte over IPv6), then the client's packet.
const (
	ProtoIPv6      = 41
	udpHdrLen      = 8
	gueHdrLen      = 4
	ipv6HdrLen     = 40
	GUEPlain4      = ipv4HdrLen + udpHdrLen + gueHdrLen // 32: IPv4 + UDP + GUE, no private data
	GUEPlain6      = ipv6HdrLen + udpHdrLen + gueHdrLen // 52
	GUEMax4        = GUEPlain4 + OptionMax              // 72
	GUEMax6        = GUEPlain6 + OptionFixed + 16*MaxPrev
	GUEDefaultPort = 6080 // forwarding.DefaultGUEPort
)

// GUESourcePort is the UDP source port the mux writes for a flow of the
// given hash: 49152 + its low 14 bits (the bucket takes the high ones).
func GUESourcePort(hash uint32) uint16 { return 0xc000 | uint16(hash&0x3fff) }

// marshalAddrs writes the option with previous owners of size bytes each
// (4: IPv4 outer, 16: IPv6 outer).
func (o Option) marshalAddrs(size int) ([]byte, error) {
	if len(o.Prev) > MaxPrev {
		return nil, fmt.Errorf("wire: %d previous servers, at most %d", len(o.Prev), MaxPrev)
	}
	n := OptionFixed + size*len(o.Prev)
	b := make([]byte, n)
	b[0], b[1], b[2], b[3] = OptionType, byte(n), o.Hop, o.Flags
	binary.BigEndian.PutUint32(b[4:], o.Generation)
	binary.BigEndian.PutUint32(b[8:], o.Incarnation)
	binary.BigEndian.PutUint32(b[12:], o.Changed)
	for i, p := range o.Prev {
		if (size == 4) != p.Is4() {
			return nil, fmt.Errorf("wire: previous owner %v in an option of %d-byte addresses", p, size)
		}
		copy(b[OptionFixed+size*i:], p.AsSlice())
	}
	return b, nil
}

// parseAddrs reads private data that fills b exactly as one option with
// size-byte previous owners (hop within the list).
func parseAddrs(b []byte, size int) (Option, error) {
	if len(b) < OptionFixed || b[0] != OptionType || int(b[1]) != len(b) || (len(b)-OptionFixed)%size != 0 ||
		(len(b)-OptionFixed)/size > MaxPrev {
		return Option{}, fmt.Errorf("%w: % x", ErrOption, b[:min(len(b), 2)])
	}
	n := (len(b) - OptionFixed) / size
	o := Option{Hop: b[2], Flags: b[3], Generation: binary.BigEndian.Uint32(b[4:]),
		Incarnation: binary.BigEndian.Uint32(b[8:]), Changed: binary.BigEndian.Uint32(b[12:])}
	if int(o.Hop) > n {
		return Option{}, fmt.Errorf("%w: hop %d past %d previous servers", ErrOption, o.Hop, n)
	}
	for i := range n {
		a, _ := netip.AddrFromSlice(b[OptionFixed+size*i : OptionFixed+size*(i+1)])
		o.Prev = append(o.Prev, a)
	}
	return o, nil
}

// EncapsulateGUE puts outer headers from src to dst (both IPv4 or both
// IPv6) in front of inner (an IPv4 packet under an IPv4 outer header, IPv6
// under IPv6) exactly as the mux does: UDP sport → dport with checksum 0,
// GUE version 0 with opt as private data when not nil. IPv4: TOS and DF
// from the inner header, id 0, TTL 64. IPv6: traffic class from the inner
// header, flow label 0, hop limit 64.
func EncapsulateGUE(inner []byte, src, dst netip.Addr, sport, dport uint16, opt *Option) ([]byte, error) {
	if src.Is4() != dst.Is4() {
		return nil, errors.New("wire: outer addresses of two families")
	}
	v6 := !src.Is4()
	ipLen, size, proto := ipv4HdrLen, 4, byte(ProtoIPIP)
	if v6 {
		ipLen, size, proto = ipv6HdrLen, 16, ProtoIPv6
	}
	var innerTot int
	switch {
	case !v6 && len(inner) >= ipv4HdrLen && inner[0]>>4 == 4:
		innerTot = int(binary.BigEndian.Uint16(inner[2:]))
	case v6 && len(inner) >= ipv6HdrLen && inner[0]>>4 == 6:
		innerTot = ipv6HdrLen + int(binary.BigEndian.Uint16(inner[4:]))
	default:
		return nil, fmt.Errorf("wire: inner packet is not IPv%d", map[bool]int{false: 4, true: 6}[v6])
	}
	var priv []byte
	if opt != nil {
		var err error
		if priv, err = opt.marshalAddrs(size); err != nil {
			return nil, err
		}
	}
	hl := ipLen + udpHdrLen + gueHdrLen + len(priv)
	out := make([]byte, hl+len(inner))
	if v6 {
		tc := inner[0]<<4 | inner[1]>>4
		out[0], out[1] = 0x60|tc>>4, tc<<4
		binary.BigEndian.PutUint16(out[4:], uint16(innerTot+hl-ipv6HdrLen))
		out[6], out[7] = ProtoUDP, OuterTTL
		s, d := src.As16(), dst.As16()
		copy(out[8:24], s[:])
		copy(out[24:40], d[:])
	} else {
		out[0], out[1] = 0x45, inner[1]
		binary.BigEndian.PutUint16(out[2:], uint16(innerTot+hl))
		binary.BigEndian.PutUint16(out[6:], binary.BigEndian.Uint16(inner[6:])&ipFlagDF)
		out[8], out[9] = OuterTTL, ProtoUDP
		s, d := src.As4(), dst.As4()
		copy(out[12:16], s[:])
		copy(out[16:20], d[:])
		binary.BigEndian.PutUint16(out[10:], Checksum(out[:ipv4HdrLen]))
	}
	u := out[ipLen:]
	binary.BigEndian.PutUint16(u[0:], sport)
	binary.BigEndian.PutUint16(u[2:], dport)
	binary.BigEndian.PutUint16(u[4:], uint16(innerTot+hl-ipLen))
	u[8], u[9] = byte(len(priv)/4), proto // version 0, C 0, Hlen; Proto
	copy(u[udpHdrLen+gueHdrLen:], priv)
	copy(out[hl:], inner)
	return out, nil
}

// DecapsulateGUE parses a GUE packet (outer IPv4 or IPv6, starting at
// pkt[0]) to UDP port port as the agent does: no IPv4 options or IPv6
// extension headers, no fragments, UDP length matching the IP length, GUE
// version 0 data with no flags, the inner protocol of the outer family, and
// private data that is empty or exactly one option.
func DecapsulateGUE(pkt []byte, port uint16) (Outer, error) {
	if len(pkt) < 1 {
		return Outer{}, ErrNotBeamer
	}
	var o Outer
	var udp []byte
	size, proto := 4, byte(ProtoIPIP)
	switch pkt[0] >> 4 {
	case 4:
		if len(pkt) < GUEPlain4 || pkt[0] != 0x45 || pkt[9] != ProtoUDP {
			return Outer{}, ErrNotBeamer
		}
		tot := int(binary.BigEndian.Uint16(pkt[2:]))
		if tot < GUEPlain4 || tot > len(pkt) {
			return Outer{}, fmt.Errorf("%w: total length %d, have %d", ErrNotBeamer, tot, len(pkt))
		}
		if binary.BigEndian.Uint16(pkt[6:])&ipFragMask != 0 {
			return Outer{}, fmt.Errorf("%w: fragment", ErrNotBeamer)
		}
		o.Src, o.Dst = netip.AddrFrom4([4]byte(pkt[12:16])), netip.AddrFrom4([4]byte(pkt[16:20]))
		udp = pkt[ipv4HdrLen:tot]
	case 6:
		if len(pkt) < GUEPlain6 || pkt[6] != ProtoUDP {
			return Outer{}, ErrNotBeamer
		}
		tot := ipv6HdrLen + int(binary.BigEndian.Uint16(pkt[4:]))
		if tot < GUEPlain6 || tot > len(pkt) {
			return Outer{}, fmt.Errorf("%w: payload length %d, have %d", ErrNotBeamer, tot-ipv6HdrLen, len(pkt)-ipv6HdrLen)
		}
		o.Src, o.Dst = netip.AddrFrom16([16]byte(pkt[8:24])), netip.AddrFrom16([16]byte(pkt[24:40]))
		udp = pkt[ipv6HdrLen:tot]
		size, proto = 16, ProtoIPv6
	default:
		return Outer{}, ErrNotBeamer
	}
	o.Encap = "gue"
	o.SrcPort, o.DstPort = binary.BigEndian.Uint16(udp[0:]), binary.BigEndian.Uint16(udp[2:])
	if o.DstPort != port {
		return Outer{}, fmt.Errorf("%w: UDP to port %d, not the GUE port %d", ErrNotBeamer, o.DstPort, port)
	}
	if int(binary.BigEndian.Uint16(udp[4:])) != len(udp) {
		return Outer{}, fmt.Errorf("%w: UDP length %d, IP says %d", ErrNotBeamer, binary.BigEndian.Uint16(udp[4:]), len(udp))
	}
	g := udp[udpHdrLen:]
	if g[0]>>5 != 0 || g[1] != proto || g[2] != 0 || g[3] != 0 {
		return Outer{}, fmt.Errorf("%w: GUE header % x (want version 0, data, proto %d, no flags)", ErrNotBeamer, g[:gueHdrLen], proto)
	}
	priv := int(g[0]&0x1f) * 4
	if gueHdrLen+priv > len(g) {
		return Outer{}, fmt.Errorf("%w: GUE private data of %d bytes past the packet", ErrNotBeamer, priv)
	}
	if priv > 0 {
		opt, err := parseAddrs(g[gueHdrLen:gueHdrLen+priv], size)
		if err != nil {
			return Outer{}, err
		}
		o.Option = &opt
	}
	o.Inner = g[gueHdrLen+priv:]
	return o, nil
}

// DecapsulateAny reads either encapsulation: IP-in-IP (IPv4 outer,
// protocol 4) or GUE to port guePort.
func DecapsulateAny(pkt []byte, guePort uint16) (Outer, error) {
	if len(pkt) >= ipv4HdrLen && pkt[0]>>4 == 4 && pkt[9] == ProtoIPIP {
		o, err := Decapsulate(pkt)
		o.Encap = "ipip"
		return o, err
	}
	return DecapsulateGUE(pkt, guePort)
}
