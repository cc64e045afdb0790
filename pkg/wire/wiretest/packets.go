// Package wiretest crafts the packets the data-path tests feed to the BPF
// programs and to the Go model: Ethernet frames with IPv4 and TCP headers
// whose checksums are right, built with gopacket.
package wiretest

import (
	"net"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TCP flag sets used by the tests.
const (
	SYN    = 1 << iota
	ACK    = 1 << iota
	RST    = 1 << iota
	FIN    = 1 << iota
	SYNACK = SYN | ACK
)

// Segment describes one TCP segment.
type Segment struct {
	Flow     wire.Flow
	Flags    int
	Seq, Ack uint32
	Payload  []byte
	TTL      uint8 // 64 when 0
	IPID     uint16
	Options  []layers.IPv4Option // IPv4 options, for malformed-input tests
}

func addr(a netip.Addr) net.IP { return net.IP(a.AsSlice()) }

// IPv4 returns the IPv4 packet (no Ethernet header).
func (s Segment) IPv4() []byte {
	ip, tcp := s.layers()
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ip, tcp, gopacket.Payload(s.Payload)); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func (s Segment) layers() (*layers.IPv4, *layers.TCP) {
	ttl := s.TTL
	if ttl == 0 {
		ttl = 64
	}
	ip := &layers.IPv4{Version: 4, TTL: ttl, Id: s.IPID, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolTCP,
		SrcIP: addr(s.Flow.Src), DstIP: addr(s.Flow.Dst), Options: s.Options}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(s.Flow.SrcPort), DstPort: layers.TCPPort(s.Flow.DstPort),
		Seq: s.Seq, Ack: s.Ack, Window: 64240,
		SYN: s.Flags&SYN != 0, ACK: s.Flags&ACK != 0, RST: s.Flags&RST != 0, FIN: s.Flags&FIN != 0}
	tcp.SetNetworkLayerForChecksum(ip)
	return ip, tcp
}

// Frame puts an Ethernet header carrying IPv4 in front of payload.
func Frame(src, dst net.HardwareAddr, payload []byte) []byte {
	f := make([]byte, 14+len(payload))
	copy(f[0:6], dst)
	copy(f[6:12], src)
	f[12], f[13] = 0x08, 0x00
	copy(f[14:], payload)
	return f
}

// Test MAC addresses: locally administered.
var (
	ClientMAC = net.HardwareAddr{0x02, 0xbe, 0xa0, 0x00, 0x00, 0x01}
	MuxMAC    = net.HardwareAddr{0x02, 0xbe, 0xa0, 0x00, 0x00, 0x02}
)
