package beamercli

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/spf13/cobra"
)

// `beamer decode`: what a captured packet says in Beamer's terms, for both
// encapsulations (IP-in-IP with the option; GUE over IPv4 or IPv6, its
// private data the option) — from a pcap file (gopacket's pcapgo, pure Go)
// or from hex (an Ethernet frame or an IP packet per argument or stdin
// line: what `tcpdump -xx` or a test vector shows).

func addGUEPortFlag(cmd *cobra.Command) *[]uint {
	return cmd.Flags().UintSlice("gue-port", nil,
		fmt.Sprintf("UDP destination port(s) read as GUE: the instances' gue_port (default %d)", forwarding.DefaultGUEPort))
}

func checkGUEPorts(ports []uint) ([]uint16, error) {
	if len(ports) == 0 {
		return []uint16{forwarding.DefaultGUEPort}, nil
	}
	var out []uint16
	for _, p := range ports {
		if p == 0 || p > 65535 {
			return nil, fmt.Errorf("--gue-port %d: a port is 1–65535", p)
		}
		out = append(out, uint16(p))
	}
	return out, nil
}

// decodeIP decodes one IP packet (IPv4 or IPv6 from its first byte): ok
// is false when it is neither IP-in-IP nor UDP to a GUE port (not ours to
// show); a packet that is, but is not valid Beamer encapsulation, comes
// back with Error set.
func decodeIP(ip []byte, guePorts []uint16) (decodedPacket, bool) {
	var p decodedPacket
	if len(ip) < 20 {
		return p, false
	}
	var port uint16
	switch ip[0] >> 4 {
	case 4:
		p.Outer.Src = netip.AddrFrom4([4]byte(ip[12:16])).String()
		p.Outer.Dst = netip.AddrFrom4([4]byte(ip[16:20])).String()
		hl := int(ip[0]&0x0f) * 4
		switch {
		case ip[9] == wire.ProtoIPIP:
			p.Encap = "ipip"
		case ip[9] == wire.ProtoUDP && hl >= 20 && len(ip) >= hl+8:
			p.Outer.SrcPort, port = binary.BigEndian.Uint16(ip[hl:]), binary.BigEndian.Uint16(ip[hl+2:])
		default:
			return p, false
		}
	case 6:
		if len(ip) < 48 || ip[6] != wire.ProtoUDP {
			return p, false
		}
		p.Outer.Src = netip.AddrFrom16([16]byte(ip[8:24])).String()
		p.Outer.Dst = netip.AddrFrom16([16]byte(ip[24:40])).String()
		p.Outer.SrcPort, port = binary.BigEndian.Uint16(ip[40:]), binary.BigEndian.Uint16(ip[42:])
	default:
		return p, false
	}
	if p.Encap == "" {
		p.Outer.DstPort = port
		found := false
		for _, g := range guePorts {
			found = found || g == port
		}
		if !found {
			return p, false
		}
		p.Encap = "gue"
	}
	o, err := wire.DecapsulateAny(ip, port)
	if err != nil {
		p.Error = err.Error()
		return p, true
	}
	p.Outer.SrcPort, p.Outer.DstPort = o.SrcPort, o.DstPort
	if o.Option != nil {
		p.Option = &decodedOption{Hop: o.Option.Hop, Flags: o.Option.Flags, Generation: o.Option.Generation,
			Incarnation: o.Option.Incarnation, Changed: o.Option.Changed, Prev: []string{}}
		for _, a := range o.Option.Prev {
			p.Option.Prev = append(p.Option.Prev, a.String())
		}
	}
	in, hl, proto := o.Inner, 0, byte(0)
	switch {
	case len(in) >= 20 && in[0]>>4 == 4:
		p.Inner.Src = netip.AddrFrom4([4]byte(in[12:16])).String()
		p.Inner.Dst = netip.AddrFrom4([4]byte(in[16:20])).String()
		hl, proto = int(in[0]&0x0f)*4, in[9]
	case len(in) >= 40 && in[0]>>4 == 6:
		p.Inner.Src = netip.AddrFrom16([16]byte(in[8:24])).String()
		p.Inner.Dst = netip.AddrFrom16([16]byte(in[24:40])).String()
		hl, proto = 40, in[6]
	}
	switch {
	case proto == wire.ProtoTCP && hl > 0 && len(in) >= hl+14:
		p.Inner.SrcPort = binary.BigEndian.Uint16(in[hl:])
		p.Inner.DstPort = binary.BigEndian.Uint16(in[hl+2:])
		p.Inner.TCPFlags = tcpFlags(in[hl+13])
	case proto == wire.ProtoUDP && hl > 0 && len(in) >= hl+8:
		// UDP (services, QUIC): the ports, and "udp" where TCP has flags.
		p.Inner.SrcPort = binary.BigEndian.Uint16(in[hl:])
		p.Inner.DstPort = binary.BigEndian.Uint16(in[hl+2:])
		p.Inner.TCPFlags = "udp"
	}
	return p, true
}

// hostPort is ADDR:PORT, [ADDR]:PORT for IPv6.
func hostPort(addr string, port uint16) string {
	if strings.Contains(addr, ":") {
		return "[" + addr + "]:" + fmt.Sprint(port)
	}
	return addr + ":" + fmt.Sprint(port)
}

// decodeHex decodes hex packets: an IP packet when the first nibble says
// IPv4 or IPv6, else an Ethernet frame (802.1Q tags skipped).
func decodeHex(packets []string, guePorts []uint16) (*decodedCapture, error) {
	c := &decodedCapture{Beamer: []decodedPacket{}, LinkType: "hex"}
	for _, h := range packets {
		h = strings.Map(func(r rune) rune {
			if r == ' ' || r == ':' || r == '\t' {
				return -1
			}
			return r
		}, strings.TrimSpace(h))
		if h == "" {
			continue
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			return c, fmt.Errorf("packet %d: %w", c.Packets+1, err)
		}
		c.Packets++
		ip := b
		if len(b) == 0 || (b[0]>>4 != 4 && b[0]>>4 != 6) {
			ip = ipOf(1 /* Ethernet */, b)
		}
		if p, ok := decodeIP(ip, guePorts); ok {
			p.Number = uint64(c.Packets)
			c.Beamer = append(c.Beamer, p)
		}
	}
	return c, nil
}

func decodeFile(cmd *cobra.Command, path, format string, ports []uint) error {
	if err := checkOutput(format); err != nil {
		return err
	}
	gue, err := checkGUEPorts(ports)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c, err := decodePcap(f, gue)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return emit(cmd.OutOrStdout(), format, c, func(w io.Writer) { printCapture(w, c) })
}

// newDecodeCommand is `beamer decode`.
func newDecodeCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "decode FILE.pcap | decode --hex HEX... (- reads lines from stdin)",
		Short: "Decode captured Beamer packets, IP-in-IP and GUE (IPv4 and IPv6 outer): the option, the outer and inner addresses",
		Long: `Prints, for every IP-in-IP packet and every UDP packet to a GUE port of a
pcap capture (tcpdump -w; Ethernet, raw IP or Linux cooked), or of hex
packets (--hex: each argument, or each stdin line with -, an Ethernet frame
or an IP packet), the encapsulation, the Beamer option (hop, incarnation,
generation, change time, previous owners) and the client's packet inside.
Packets that are ours but malformed say why. docs/wire-format.md has the
byte layouts.`,
		Args: cobra.ArbitraryArgs}
	format := addOutputFlag(cmd)
	gue := addGUEPortFlag(cmd)
	asHex := cmd.Flags().Bool("hex", false, "the arguments are hex packets (an Ethernet frame or an IP packet each; - reads one per line from stdin)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if !*asHex {
			if len(args) != 1 {
				return fmt.Errorf("want one pcap file, or --hex with hex packets")
			}
			return decodeFile(cmd, args[0], *format, *gue)
		}
		if err := checkOutput(*format); err != nil {
			return err
		}
		ports, err := checkGUEPorts(*gue)
		if err != nil {
			return err
		}
		packets, err := hexArgs(cmd.InOrStdin(), args)
		if err != nil {
			return err
		}
		c, err := decodeHex(packets, ports)
		if err != nil {
			return err
		}
		return emit(cmd.OutOrStdout(), *format, c, func(w io.Writer) { printCapture(w, c) })
	}
	return cmd
}

// hexArgs are decode --hex's packets: each argument, or for "-" each line
// of stdin.
func hexArgs(stdin io.Reader, args []string) ([]string, error) {
	var packets []string
	for _, a := range args {
		if a != "-" {
			packets = append(packets, a)
			continue
		}
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
		for sc.Scan() {
			packets = append(packets, sc.Text())
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	if len(packets) == 0 {
		return nil, fmt.Errorf("--hex: no packets given")
	}
	return packets, nil
}
