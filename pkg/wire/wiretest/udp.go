package wiretest

import (
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Datagram describes one UDP datagram (Flow.Proto is ignored).
type Datagram struct {
	Flow    wire.Flow
	Payload []byte
	IPID    uint16
}

// IPv4 returns the IPv4 packet (no Ethernet header), checksums right.
func (d Datagram) IPv4() []byte {
	ip := &layers.IPv4{Version: 4, TTL: 64, Id: d.IPID, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolUDP,
		SrcIP: addr(d.Flow.Src), DstIP: addr(d.Flow.Dst)}
	udp := &layers.UDP{SrcPort: layers.UDPPort(d.Flow.SrcPort), DstPort: layers.UDPPort(d.Flow.DstPort)}
	udp.SetNetworkLayerForChecksum(ip)
	return serialize(ip, udp, gopacket.Payload(d.Payload))
}

// QUICShort is a QUIC short-header packet's start: flags, the DCID, then
// filler standing for the protected packet number and payload.
func QUICShort(dcid []byte) []byte {
	b := append([]byte{0x41}, dcid...)
	return append(b, make([]byte, 24)...)
}

// QUICLong is a QUIC v1 long-header packet's start of type typ (0 Initial,
// 2 Handshake): flags, version 1, the DCID and an 8-byte SCID, then filler.
func QUICLong(typ byte, dcid []byte) []byte {
	b := []byte{0xc0 | typ<<4, 0, 0, 0, 1, byte(len(dcid))}
	b = append(b, dcid...)
	b = append(b, 8, 1, 2, 3, 4, 5, 6, 7, 8)
	return append(b, make([]byte, 24)...)
}

// ICMPv4 returns an IPv4 packet src -> dst carrying an ICMP message of the
// given type and code, with rest (the 4 bytes after the checksum) and
// body after it.
func ICMPv4(src, dst netip.Addr, typ, code uint8, rest [4]byte, body []byte) []byte {
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolICMPv4, SrcIP: addr(src), DstIP: addr(dst)}
	msg := append(append([]byte{typ, code, 0, 0}, rest[:]...), body...)
	c := wire.Checksum(msg)
	msg[2], msg[3] = byte(c>>8), byte(c)
	return serialize(ip, gopacket.Payload(msg))
}

func serialize(ls ...gopacket.SerializableLayer) []byte {
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ls...); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
