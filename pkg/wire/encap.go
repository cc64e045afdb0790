package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// Outer header constants.
const (
	ProtoIPIP   = 4
	ProtoTCP    = 6
	ProtoUDP    = 17
	ProtoICMP   = 1
	OuterTTL    = 64
	ipv4HdrLen  = 20
	ipFlagDF    = 0x4000
	ipFragMask  = 0x3fff // MF and fragment offset
	OuterPlain  = ipv4HdrLen
	OuterWithOp = ipv4HdrLen + OptionFixed // with an option naming no previous server
	OuterMax    = ipv4HdrLen + OptionMax   // IHL 15
)

// Checksum is the Internet checksum of b (RFC 1071).
func Checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

// Encapsulate puts an outer IPv4 header from src to dst in front of the inner
// IPv4 packet, with the Beamer option when opt is not nil, exactly as the mux
// does: TOS and the don't-fragment bit copied from the inner header, id 0,
// TTL 64, protocol 4.
func Encapsulate(inner []byte, src, dst netip.Addr, opt *Option) ([]byte, error) {
	if len(inner) < ipv4HdrLen || inner[0]>>4 != 4 {
		return nil, errors.New("wire: inner packet is not IPv4")
	}
	hl := OuterPlain
	if opt != nil {
		hl += opt.Len()
	}
	innerTot := int(binary.BigEndian.Uint16(inner[2:]))
	out := make([]byte, hl+len(inner))
	h := out[:hl]
	h[0] = 0x40 | byte(hl/4)
	h[1] = inner[1]
	binary.BigEndian.PutUint16(h[2:], uint16(innerTot+hl))
	binary.BigEndian.PutUint16(h[6:], binary.BigEndian.Uint16(inner[6:])&ipFlagDF)
	h[8], h[9] = OuterTTL, ProtoIPIP
	s, d := src.As4(), dst.As4()
	copy(h[12:16], s[:])
	copy(h[16:20], d[:])
	if opt != nil {
		copy(h[20:], opt.Marshal())
	}
	binary.BigEndian.PutUint16(h[10:], Checksum(h))
	copy(out[hl:], inner)
	return out, nil
}

// Outer is a parsed outer header.
type Outer struct {
	Src, Dst netip.Addr
	Option   *Option // nil when the packet carries none
	Inner    []byte  // the inner packet
	// Encap is "ipip" or "gue" (DecapsulateAny, DecapsulateGUE; empty from
	// Decapsulate); SrcPort and DstPort are GUE's UDP ports.
	Encap            string
	SrcPort, DstPort uint16
}

// ErrNotBeamer is returned for packets that are not Beamer encapsulation.
var ErrNotBeamer = errors.New("wire: not a Beamer-encapsulated packet")

// Decapsulate parses an IP-in-IP packet as the agent does: a 20-byte outer
// header, or 36–60 bytes with exactly the Beamer option; no fragments.
func Decapsulate(pkt []byte) (Outer, error) {
	if len(pkt) < ipv4HdrLen || pkt[0]>>4 != 4 || pkt[9] != ProtoIPIP {
		return Outer{}, ErrNotBeamer
	}
	hl := int(pkt[0]&0x0f) * 4
	tot := int(binary.BigEndian.Uint16(pkt[2:]))
	if (hl != OuterPlain && hl < OuterWithOp) || tot < hl || tot > len(pkt) {
		return Outer{}, fmt.Errorf("%w: header length %d, total %d, have %d", ErrNotBeamer, hl, tot, len(pkt))
	}
	if binary.BigEndian.Uint16(pkt[6:])&ipFragMask != 0 {
		return Outer{}, fmt.Errorf("%w: fragment", ErrNotBeamer)
	}
	o := Outer{Src: netip.AddrFrom4([4]byte(pkt[12:16])), Dst: netip.AddrFrom4([4]byte(pkt[16:20])), Inner: pkt[hl:tot]}
	if hl >= OuterWithOp {
		opt, err := ParseOption(pkt[ipv4HdrLen:hl])
		if err != nil {
			return Outer{}, err
		}
		o.Option = &opt
	}
	return o, nil
}

// PseudoChecksum is the Internet checksum of payload (a UDP datagram, an
// ICMPv6 message) behind the pseudo-header of src and dst (IPv4, RFC 768;
// IPv6, RFC 8200 §8.1) with protocol proto. Over a payload whose checksum
// field holds the right value it is 0; over one whose field is 0 it is the
// value to write there (a UDP result of 0 is sent as 0xffff).
func PseudoChecksum(src, dst netip.Addr, proto uint8, payload []byte) uint16 {
	var b []byte
	b = append(b, src.AsSlice()...)
	b = append(b, dst.AsSlice()...)
	if src.Is4() {
		b = append(b, 0, proto, byte(len(payload)>>8), byte(len(payload)))
	} else {
		b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
		b = append(b, 0, 0, 0, proto)
	}
	return Checksum(append(b, payload...))
}
