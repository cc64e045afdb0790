package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/spf13/cobra"
)

// decodedPacket is one Beamer-encapsulated packet of a capture
// (`decode-pcap -o json|yaml`, docs/wire-format.md "Reading captures").
type decodedPacket struct {
	Number uint64 `json:"number"` // 1-based, as tcpdump and Wireshark count
	Time   string `json:"time"`   // RFC 3339 with nanoseconds
	Outer  struct {
		Src string `json:"src"`
		Dst string `json:"dst"`
	} `json:"outer"`
	// Option is absent for IP-in-IP without the Beamer option (a Maglev
	// instance's packets, or a bucket with no history on older muxes).
	Option *decodedOption `json:"option,omitempty"`
	Inner  struct {
		Src      string `json:"src"`
		SrcPort  uint16 `json:"src_port"`
		Dst      string `json:"dst"`
		DstPort  uint16 `json:"dst_port"`
		TCPFlags string `json:"tcp_flags"`
	} `json:"inner"`
	Error string `json:"error,omitempty"` // IP-in-IP that is not valid Beamer encapsulation
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
	Beamer   []decodedPacket `json:"beamer"`  // the IP-in-IP ones
	LinkType string          `json:"link_type"`
}

// ipOf finds the IPv4 packet in a captured frame of the given link type.
func ipOf(lt layers.LinkType, frame []byte) []byte {
	switch lt {
	case layers.LinkTypeEthernet:
		for off := 12; off+2 <= len(frame); off += 4 { // skip 802.1Q tags
			switch binary.BigEndian.Uint16(frame[off:]) {
			case 0x0800:
				return frame[off+2:]
			case 0x8100, 0x88a8:
				continue
			}
			return nil
		}
	case layers.LinkTypeRaw, layers.LinkTypeIPv4:
		return frame
	case layers.LinkTypeLinuxSLL: // tcpdump -i any
		if len(frame) >= 16 && binary.BigEndian.Uint16(frame[14:]) == 0x0800 {
			return frame[16:]
		}
	case layers.LinkTypeLinuxSLL2:
		if len(frame) >= 20 && binary.BigEndian.Uint16(frame[0:]) == 0x0800 {
			return frame[20:]
		}
	}
	return nil
}

// decodePcap reads a classic pcap file (pure Go: gopacket's pcapgo).
func decodePcap(r io.Reader) (*decodedCapture, error) {
	pr, err := pcapgo.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("not a pcap file (pcapng: convert with `editcap -F pcap`): %w", err)
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
		ip := ipOf(pr.LinkType(), frame)
		if len(ip) < 20 || ip[0]>>4 != 4 || ip[9] != wire.ProtoIPIP {
			continue
		}
		p := decodedPacket{Number: uint64(c.Packets), Time: ci.Timestamp.UTC().Format(time.RFC3339Nano)}
		p.Outer.Src = netip.AddrFrom4([4]byte(ip[12:16])).String()
		p.Outer.Dst = netip.AddrFrom4([4]byte(ip[16:20])).String()
		o, err := wire.Decapsulate(ip)
		if err != nil {
			p.Error = err.Error()
			c.Beamer = append(c.Beamer, p)
			continue
		}
		if o.Option != nil {
			p.Option = &decodedOption{Hop: o.Option.Hop, Flags: o.Option.Flags, Generation: o.Option.Generation,
				Incarnation: o.Option.Incarnation, Changed: o.Option.Changed, Prev: []string{}}
			for _, a := range o.Option.Prev {
				p.Option.Prev = append(p.Option.Prev, a.String())
			}
		}
		in := o.Inner
		if len(in) >= 20 && in[0]>>4 == 4 {
			p.Inner.Src = netip.AddrFrom4([4]byte(in[12:16])).String()
			p.Inner.Dst = netip.AddrFrom4([4]byte(in[16:20])).String()
			if hl := int(in[0]&0x0f) * 4; in[9] == wire.ProtoTCP && len(in) >= hl+14 {
				p.Inner.SrcPort = binary.BigEndian.Uint16(in[hl:])
				p.Inner.DstPort = binary.BigEndian.Uint16(in[hl+2:])
				p.Inner.TCPFlags = tcpFlags(in[hl+13])
			}
		}
		c.Beamer = append(c.Beamer, p)
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
		fmt.Fprintf(w, "#%d %s %s > %s", p.Number, p.Time, p.Outer.Src, p.Outer.Dst)
		switch {
		case p.Error != "":
			fmt.Fprintf(w, " ipip: %s\n", p.Error)
			continue
		case p.Option == nil:
			fmt.Fprint(w, " ipip, no beamer option")
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
		fmt.Fprintf(w, " | %s:%d > %s:%d %s\n", p.Inner.Src, p.Inner.SrcPort, p.Inner.Dst, p.Inner.DstPort, p.Inner.TCPFlags)
	}
	fmt.Fprintf(w, "%d packets (%s), %d IP-in-IP\n", c.Packets, c.LinkType, len(c.Beamer))
}

func init() {
	cmd := &cobra.Command{Use: "decode-pcap FILE", Short: "Print the Beamer option of every IP-in-IP packet of a pcap capture (tcpdump -w)", Args: cobra.ExactArgs(1)}
	format := addOutputFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkOutput(*format); err != nil {
			return err
		}
		f, err := os.Open(args[0])
		if err != nil {
			return err
		}
		defer f.Close()
		c, err := decodePcap(f)
		if err != nil {
			return fmt.Errorf("%s: %w", args[0], err)
		}
		return emit(cmd.OutOrStdout(), *format, c, func(w io.Writer) { printCapture(w, c) })
	}
	rootCmd.AddCommand(cmd)
}
