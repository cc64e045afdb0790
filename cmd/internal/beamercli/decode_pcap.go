package beamercli

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/spf13/cobra"
)

// decodedPacket is one Beamer-encapsulated packet of a capture
// (`decode-pcap -o json|yaml`, docs/wire-format.md "Reading captures").
type decodedPacket struct {
	Number uint64 `json:"number"` // 1-based, as tcpdump and Wireshark count
	Time   string `json:"time"`   // RFC 3339 with nanoseconds
	// Point is the pcapng interface the packet was captured on: with
	// `beamer mux|agent capture`, the capture point (mux-rx, mux-tx...).
	Point string `json:"point,omitempty"`
	// Encap is "ipip" or "gue" (docs/wire-format.md, "Encapsulation" and
	// "GUE").
	Encap string `json:"encap"`
	Outer struct {
		Src     string `json:"src"`
		Dst     string `json:"dst"`
		SrcPort uint16 `json:"src_port,omitempty"` // GUE: from the flow hash
		DstPort uint16 `json:"dst_port,omitempty"` // GUE: the instance's port
	} `json:"outer"`
	// Option is absent for packets without the Beamer option (IP-in-IP
	// without it, GUE without private data: MPTCP subflows by server id,
	// QUIC by connection id, a Maglev instance's packets).
	Option *decodedOption `json:"option,omitempty"`
	Inner  struct {
		Src      string `json:"src"`
		SrcPort  uint16 `json:"src_port"`
		Dst      string `json:"dst"`
		DstPort  uint16 `json:"dst_port"`
		TCPFlags string `json:"tcp_flags"`
	} `json:"inner"`
	Error string `json:"error,omitempty"` // IP-in-IP or GUE that is not valid Beamer encapsulation
}

type decodedOption struct {
	Hop         uint8    `json:"hop"`
	Flags       uint8    `json:"flags"`
	Generation  uint32   `json:"generation"`
	Incarnation uint32   `json:"incarnation"`
	Changed     uint32   `json:"changed"` // Unix seconds
	Prev        []string `json:"prev"`    // previous owners, most recent first
}

type decodedCapture struct {
	Packets  int             `json:"packets"` // all packets in the file
	Beamer   []decodedPacket `json:"beamer"`  // the IP-in-IP and GUE ones
	LinkType string          `json:"link_type"`
	// Points counts all packets per pcapng interface name (capture
	// point); absent for pcap.
	Points map[string]int `json:"points,omitempty"`
}

// ipOf finds the IP packet (IPv4, or IPv6 for GUE over IPv6) in a captured
// frame of the given link type.
func ipOf(lt layers.LinkType, frame []byte) []byte {
	switch lt {
	case layers.LinkTypeEthernet:
		for off := 12; off+2 <= len(frame); off += 4 { // skip 802.1Q tags
			switch binary.BigEndian.Uint16(frame[off:]) {
			case 0x0800, 0x86dd:
				return frame[off+2:]
			case 0x8100, 0x88a8:
				continue
			}
			return nil
		}
	case layers.LinkTypeRaw, layers.LinkTypeIPv4, layers.LinkTypeIPv6:
		return frame
	case layers.LinkTypeLinuxSLL: // tcpdump -i any
		if len(frame) >= 16 && (binary.BigEndian.Uint16(frame[14:]) == 0x0800 || binary.BigEndian.Uint16(frame[14:]) == 0x86dd) {
			return frame[16:]
		}
	case layers.LinkTypeLinuxSLL2:
		if len(frame) >= 20 && (binary.BigEndian.Uint16(frame[0:]) == 0x0800 || binary.BigEndian.Uint16(frame[0:]) == 0x86dd) {
			return frame[20:]
		}
	}
	return nil
}

// pcapngMagic is the first word of a pcapng file (its section header
// block type, the same in either byte order).
const pcapngMagic = 0x0a0d0d0a

// decodePcap reads a pcap or pcapng file (pure Go: gopacket's pcapgo).
// guePorts are the UDP ports read as GUE.
func decodePcap(r io.Reader, guePorts []uint16) (*decodedCapture, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(4); len(magic) == 4 && binary.LittleEndian.Uint32(magic) == pcapngMagic {
		return decodePcapng(br, guePorts)
	}
	pr, err := pcapgo.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("neither a pcap nor a pcapng file: %w", err)
	}
	c := &decodedCapture{Beamer: []decodedPacket{}, LinkType: pr.LinkType().String()}
	for {
		frame, ci, err := pr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		if err != nil {
			return c, fmt.Errorf("packet %d: %w", c.Packets+1, err)
		}
		c.Packets++
		if p, ok := decodeIP(ipOf(pr.LinkType(), frame), guePorts); ok {
			p.Number, p.Time = uint64(c.Packets), ci.Timestamp.UTC().Format(time.RFC3339Nano)
			c.Beamer = append(c.Beamer, p)
		}
	}
}

// decodePcapng reads a pcapng file: each packet with its interface's link
// type, and the interface's name as its point.
func decodePcapng(r io.Reader, guePorts []uint16) (*decodedCapture, error) {
	nr, err := pcapgo.NewNgReader(r, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		return nil, fmt.Errorf("pcapng: %w", err)
	}
	c := &decodedCapture{Beamer: []decodedPacket{}, LinkType: nr.LinkType().String(), Points: map[string]int{}}
	for {
		frame, ci, err := nr.ReadPacketData()
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		if err != nil {
			return c, fmt.Errorf("packet %d: %w", c.Packets+1, err)
		}
		c.Packets++
		intf, err := nr.Interface(ci.InterfaceIndex)
		if err != nil {
			return c, fmt.Errorf("packet %d: %w", c.Packets, err)
		}
		c.Points[intf.Name]++
		if p, ok := decodeIP(ipOf(intf.LinkType, frame), guePorts); ok {
			p.Number, p.Time, p.Point = uint64(c.Packets), ci.Timestamp.UTC().Format(time.RFC3339Nano), intf.Name
			c.Beamer = append(c.Beamer, p)
		}
	}
}

// tcpFlags is tcpdump's notation: [S], [S.], [.], [P.], [F.], [R].
func tcpFlags(f byte) string {
	var b strings.Builder
	for _, x := range []struct {
		bit byte
		c   string
	}{{0x02, "S"}, {0x01, "F"}, {0x04, "R"}, {0x08, "P"}, {0x10, "."}} {
		if f&x.bit != 0 {
			b.WriteString(x.c)
		}
	}
	return "[" + b.String() + "]"
}

func printCapture(w io.Writer, c *decodedCapture) {
	for _, p := range c.Beamer {
		printPacket(w, p)
	}
	ipip := 0
	for _, p := range c.Beamer {
		if p.Encap == "ipip" {
			ipip++
		}
	}
	fmt.Fprintf(w, "%d packets (%s), %d IP-in-IP, %d GUE\n", c.Packets, c.LinkType, ipip, len(c.Beamer)-ipip)
	if len(c.Points) > 0 {
		var by []string
		for _, name := range slices.Sorted(maps.Keys(c.Points)) {
			by = append(by, fmt.Sprintf("%s %d", name, c.Points[name]))
		}
		fmt.Fprintf(w, "by point: %s\n", strings.Join(by, ", "))
	}
}

// printPacket is one line: where, the encapsulation and its option, and
// the client's packet inside.
func printPacket(w io.Writer, p decodedPacket) {
	if p.Number > 0 {
		fmt.Fprintf(w, "#%d ", p.Number)
	}
	if p.Time != "" {
		fmt.Fprintf(w, "%s ", p.Time)
	}
	if p.Point != "" {
		fmt.Fprintf(w, "%s ", p.Point)
	}
	fmt.Fprintf(w, "%s > %s", p.Outer.Src, p.Outer.Dst)
	if p.Encap == "gue" {
		fmt.Fprintf(w, " gue %d > %d", p.Outer.SrcPort, p.Outer.DstPort)
	}
	switch {
	case p.Error != "":
		fmt.Fprintf(w, " %s: %s\n", p.Encap, p.Error)
		return
	case p.Option == nil:
		fmt.Fprintf(w, " %s, no beamer option", p.Encap)
	default:
		o := p.Option
		fmt.Fprintf(w, " beamer hop %d incarnation %d generation %d", o.Hop, o.Incarnation, o.Generation)
		if len(o.Prev) > 0 {
			fmt.Fprintf(w, " changed %s prev [%s]", time.Unix(int64(o.Changed), 0).UTC().Format(time.RFC3339), strings.Join(o.Prev, " "))
		}
		if o.Flags != 0 {
			fmt.Fprintf(w, " flags %#02x", o.Flags)
		}
	}
	fmt.Fprintf(w, " | %s > %s %s\n", hostPort(p.Inner.Src, p.Inner.SrcPort), hostPort(p.Inner.Dst, p.Inner.DstPort), p.Inner.TCPFlags)
}

// newDecodePcapCommand is `beamer decode-pcap`: decode for a pcap file only.
func newDecodePcapCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "decode-pcap FILE", Short: "Print the Beamer option of every IP-in-IP and GUE packet of a pcap capture (tcpdump -w); beamer decode also reads hex", Args: cobra.ExactArgs(1)}
	format := addOutputFlag(cmd)
	gue := addGUEPortFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return decodeFile(cmd, args[0], *format, *gue)
	}
	return cmd
}
