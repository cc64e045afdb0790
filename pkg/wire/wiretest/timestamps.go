package wiretest

import (
	"encoding/binary"
	"net"
	"net/netip"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// TSSegment is an IPv4 TCP segment src → dst carrying the timestamp option
// and one byte of payload: in Linux's data layout (NOP NOP TS) or, with
// synLayout, the SYN-ACK layout (MSS, SACK-permitted, TS, NOP, window
// scale) that a general option parse must walk.
func TSSegment(src, dst netip.AddrPort, syn, ack bool, tsval, tsecr uint32, synLayout bool) []byte {
	ip := &layers.IPv4{Version: 4, TTL: 64, Flags: layers.IPv4DontFragment, Protocol: layers.IPProtocolTCP,
		SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
	ts := make([]byte, 8)
	binary.BigEndian.PutUint32(ts, tsval)
	binary.BigEndian.PutUint32(ts[4:], tsecr)
	tsOpt := layers.TCPOption{OptionType: layers.TCPOptionKindTimestamps, OptionLength: 10, OptionData: ts}
	nop := layers.TCPOption{OptionType: layers.TCPOptionKindNop, OptionLength: 1}
	opts := []layers.TCPOption{nop, nop, tsOpt}
	if synLayout {
		opts = []layers.TCPOption{
			{OptionType: layers.TCPOptionKindMSS, OptionLength: 4, OptionData: []byte{0x05, 0xb4}},
			{OptionType: layers.TCPOptionKindSACKPermitted, OptionLength: 2},
			tsOpt, nop,
			{OptionType: layers.TCPOptionKindWindowScale, OptionLength: 3, OptionData: []byte{7}},
		}
	}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: 1000, Ack: 2000,
		Window: 64240, SYN: syn, ACK: ack, Options: opts}
	tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		ip, tcp, gopacket.Payload("x")); err != nil {
		panic(err)
	}
	return buf.Bytes()
}
