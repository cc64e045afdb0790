package beamercli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"github.com/spf13/cobra"
)

// `beamer mux capture` and `beamer agent capture`: a bounded capture of
// what the running daemon's eBPF programs receive and send, taken in the
// programs themselves (bpf/include/capture.h) through the maps the daemon
// pins, written as pcapng (one interface per capture point) or pcap.

const captureDefaultCount = 1000

// captureFlags are the command's options.
type captureFlags struct {
	iface, pinDir, file, format, vip, filter string
	points                                   []string
	count, snaplen                           int
	duration                                 time.Duration
	guePort                                  uint
}

// newCaptureCommand is `beamer mux capture` or `beamer agent capture`
// (parent), at the daemon's capture points.
func newCaptureCommand(parent string, points []dataplane.CapturePoint) *cobra.Command {
	var f captureFlags
	var names []string
	for _, p := range points {
		names = append(names, p.String())
	}
	cmd := &cobra.Command{
		Use:   "capture -w FILE [--vip ADDR | --filter PROTO/SRC/SPORT/DST/DPORT]",
		Short: "Capture what the running " + parent + "'s eBPF programs receive and send (bounded, pcapng or pcap)",
		Long: `Captures packets in the running ` + parent + `'s eBPF programs, at its capture points
(` + strings.Join(names, ", ") + `), through the maps it pins in its pin directory, and
writes them to FILE as pcapng (each point an interface named after it) or pcap.
The capture stops after -c records, after --duration, or on Ctrl-C/SIGTERM; the
kernel enforces the count and the duration too. Only one capture at a time per
daemon; the filter is turned off when the command exits. Needs root.

The filter applies to the innermost packet (the client's, inside any IP-in-IP
or GUE encapsulation): --vip ADDR takes packets to ADDR; --filter takes
PROTO/SRC/SPORT/DST/DPORT, each field empty or * for any (tcp, udp, icmp or a
protocol number).`,
		Example: "  beamer " + parent + " capture --iface eth0 --vip 198.18.0.100 -c 100 -w /tmp/vip.pcapng\n" +
			"  beamer " + parent + " capture --iface eth0 --filter tcp/198.18.1.10/*/198.18.0.100/80 --duration 10s -w /tmp/client.pcapng",
		Args: cobra.NoArgs,
	}
	fl := cmd.Flags()
	fl.StringVar(&f.iface, "iface", "", "the "+parent+"'s interface (names its default pin directory)")
	fl.StringVar(&f.pinDir, "pin-dir", "", "the "+parent+"'s --pin-dir (default /sys/fs/bpf/beamer/"+parent+"-NETNS-IFACE)")
	fl.StringVarP(&f.file, "write", "w", "", "the file to write (- for standard output)")
	fl.StringVar(&f.format, "format", "pcapng", "pcapng (the point of each packet kept as its interface) or pcap")
	fl.IntVarP(&f.count, "count", "c", captureDefaultCount, fmt.Sprintf("stop after this many packets (1..%d)", dataplane.CaptureMaxCount))
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long (0: only the count bounds it)")
	fl.IntVar(&f.snaplen, "snaplen", dataplane.CaptureSnapMax, fmt.Sprintf("bytes kept of each packet (1..%d)", dataplane.CaptureSnapMax))
	fl.StringVar(&f.vip, "vip", "", "only packets to this VIP")
	fl.StringVar(&f.filter, "filter", "", "only packets of this 5-tuple: PROTO/SRC/SPORT/DST/DPORT, any field empty or *")
	fl.StringSliceVar(&f.points, "point", nil, "only these capture points (default all: "+strings.Join(names, ",")+")")
	fl.UintVar(&f.guePort, "gue-port", uint(forwarding.DefaultGUEPort), "UDP destination port read as GUE (the instances' gue_port)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		opts, err := f.options(points)
		if err != nil {
			return err
		}
		if f.file == "" {
			return errors.New("give -w FILE (or -w - for standard output)")
		}
		if f.format != "pcapng" && f.format != "pcap" {
			return fmt.Errorf("--format %q: want pcapng or pcap", f.format)
		}
		if os.Geteuid() != 0 {
			return fmt.Errorf("beamer %s capture must run as root: it opens the %s's pinned BPF maps in %s", parent, parent, dataplane.BPFFSRoot)
		}
		pinDir := f.pinDir
		if pinDir == "" {
			if f.iface == "" {
				return fmt.Errorf("give the %s's --iface (or its --pin-dir)", parent)
			}
			var err error
			if pinDir, err = defaultPinDir(parent, f.iface); err != nil {
				return err
			}
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		n, lost, err := runCapture(ctx, cmd.ErrOrStderr(), pinDir, opts, f.file, f.format)
		if err != nil && n == 0 {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "%d packets captured", n)
		if lost > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), ", %d lost (the ring buffer was full)", lost)
		}
		fmt.Fprintln(cmd.ErrOrStderr())
		return err
	}
	return cmd
}

// options checks the flags and makes the capture's options.
func (f *captureFlags) options(points []dataplane.CapturePoint) (dataplane.CaptureOptions, error) {
	o := dataplane.CaptureOptions{Count: f.count, Duration: f.duration, Snaplen: f.snaplen}
	if f.count < 1 || f.count > dataplane.CaptureMaxCount {
		return o, fmt.Errorf("-c %d: want 1..%d", f.count, dataplane.CaptureMaxCount)
	}
	if f.snaplen < 1 || f.snaplen > dataplane.CaptureSnapMax {
		return o, fmt.Errorf("--snaplen %d: want 1..%d", f.snaplen, dataplane.CaptureSnapMax)
	}
	if f.duration < 0 {
		return o, fmt.Errorf("--duration %v: negative", f.duration)
	}
	if f.guePort == 0 || f.guePort > 65535 {
		return o, fmt.Errorf("--gue-port %d: a port is 1–65535", f.guePort)
	}
	o.Filter.GUEPort = uint16(f.guePort)
	if f.vip != "" && f.filter != "" {
		return o, errors.New("give --vip or --filter, not both (--filter's DST is the VIP)")
	}
	if f.vip != "" {
		a, err := netip.ParseAddr(f.vip)
		if err != nil {
			return o, fmt.Errorf("--vip: %w", err)
		}
		o.Filter.Dst = a
	}
	if f.filter != "" {
		if err := parseCaptureFilter(f.filter, &o.Filter); err != nil {
			return o, err
		}
	}
	for _, s := range f.points {
		p, err := dataplane.ParseCapturePoint(s)
		if err != nil {
			return o, err
		}
		found := false
		for _, q := range points {
			found = found || q == p
		}
		if !found {
			return o, fmt.Errorf("--point %s is not one of this daemon's points", s)
		}
		o.Filter.Points = append(o.Filter.Points, p)
	}
	if len(o.Filter.Points) == 0 {
		o.Filter.Points = points
	}
	return o, nil
}

// parseCaptureFilter reads PROTO/SRC/SPORT/DST/DPORT.
func parseCaptureFilter(s string, f *dataplane.CaptureFilter) error {
	parts := strings.Split(s, "/")
	if len(parts) != 5 {
		return fmt.Errorf("--filter %q: want PROTO/SRC/SPORT/DST/DPORT (5 fields, each may be empty or *)", s)
	}
	any := func(x string) bool { return x == "" || x == "*" }
	if p := parts[0]; !any(p) {
		switch strings.ToLower(p) {
		case "tcp":
			f.Proto = 6
		case "udp":
			f.Proto = 17
		case "icmp":
			f.Proto = 1
		case "icmp6", "ipv6-icmp":
			f.Proto = 58
		default:
			n, err := strconv.ParseUint(p, 10, 8)
			if err != nil || n == 0 {
				return fmt.Errorf("--filter protocol %q: want tcp, udp, icmp, icmp6 or a number 1..255", p)
			}
			f.Proto = uint8(n)
		}
	}
	for _, a := range []struct {
		text, what string
		to         *netip.Addr
	}{{parts[1], "source", &f.Src}, {parts[3], "destination", &f.Dst}} {
		if any(a.text) {
			continue
		}
		addr, err := netip.ParseAddr(a.text)
		if err != nil {
			return fmt.Errorf("--filter %s address: %w", a.what, err)
		}
		*a.to = addr
	}
	for _, p := range []struct {
		text, what string
		to         *uint16
	}{{parts[2], "source", &f.SrcPort}, {parts[4], "destination", &f.DstPort}} {
		if any(p.text) {
			continue
		}
		n, err := strconv.ParseUint(p.text, 10, 16)
		if err != nil || n == 0 {
			return fmt.Errorf("--filter %s port %q: want 1..65535", p.what, p.text)
		}
		*p.to = uint16(n)
	}
	if f.Src.IsValid() && f.Dst.IsValid() && f.Src.Unmap().Is4() != f.Dst.Unmap().Is4() {
		return fmt.Errorf("--filter: source %v and destination %v are of different families", f.Src, f.Dst)
	}
	return nil
}

// captureWriter writes records in one of the two formats.
type captureWriter struct {
	ng    *pcapgo.NgWriter
	pcap  *pcapgo.Writer
	iface map[dataplane.CapturePoint]int // pcapng interface per point
}

func newCaptureWriter(w io.Writer, format string, snaplen int, points []dataplane.CapturePoint) (*captureWriter, error) {
	cw := &captureWriter{iface: map[dataplane.CapturePoint]int{}}
	if format == "pcap" {
		cw.pcap = pcapgo.NewWriterNanos(w)
		return cw, cw.pcap.WriteFileHeader(uint32(snaplen), layers.LinkTypeEthernet)
	}
	intf := func(p dataplane.CapturePoint) pcapgo.NgInterface {
		return pcapgo.NgInterface{Name: p.String(), Description: "beamer capture point " + p.String(),
			LinkType: layers.LinkTypeEthernet, SnapLength: uint32(snaplen), TimestampResolution: 9}
	}
	opts := pcapgo.DefaultNgWriterOptions
	opts.SectionInfo.Application = "beamer"
	opts.SectionInfo.Comment = "beamer capture: one interface per capture point (docs/operations.md, \"Capturing packets\")"
	var err error
	if cw.ng, err = pcapgo.NewNgWriterInterface(w, intf(points[0]), opts); err != nil {
		return nil, err
	}
	cw.iface[points[0]] = 0
	for _, p := range points[1:] {
		id, err := cw.ng.AddInterface(intf(p))
		if err != nil {
			return nil, err
		}
		cw.iface[p] = id
	}
	return cw, nil
}

func (cw *captureWriter) write(r dataplane.CaptureRecord) error {
	ci := gopacket.CaptureInfo{Timestamp: r.Time, CaptureLength: len(r.Data), Length: r.Length}
	if cw.pcap != nil {
		return cw.pcap.WritePacket(ci, r.Data)
	}
	id, ok := cw.iface[r.Point]
	if !ok {
		return fmt.Errorf("a record of capture point %v, not asked for", r.Point)
	}
	ci.InterfaceIndex = id
	return cw.ng.WritePacketWithOptions(ci, r.Data, pcapgo.NgPacketOptions{Comments: []string{r.Point.String()}})
}

func (cw *captureWriter) flush() error {
	if cw.ng != nil {
		return cw.ng.Flush()
	}
	return nil
}

// runCapture captures into file until the bound or ctx's end; the packets
// written, and the ones the kernel lost.
// status hears when the capture is on.
func runCapture(ctx context.Context, status io.Writer, pinDir string, o dataplane.CaptureOptions, file, format string) (n int, lost uint64, err error) {
	// The capture first: a refused one (no daemon, another capture) leaves
	// no file behind.
	c, err := dataplane.StartCapture(pinDir, o)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		lost = c.Lost()
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}()
	var out io.Writer = os.Stdout
	if file != "-" {
		fh, err := os.Create(file)
		if err != nil {
			return 0, 0, err
		}
		defer func() {
			if cerr := fh.Close(); err == nil {
				err = cerr
			}
		}()
		out = fh
	}
	cw, err := newCaptureWriter(out, format, o.Snaplen, o.Filter.Points)
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if ferr := cw.flush(); err == nil {
			err = ferr
		}
	}()
	var at []string
	for _, p := range o.Filter.Points {
		at = append(at, p.String())
	}
	fmt.Fprintf(status, "capturing at %s (%s): up to %d packets\n", strings.Join(at, ","), pinDir, o.Count)
	for ctx.Err() == nil {
		r, err := c.Next(time.Now().Add(200 * time.Millisecond))
		switch {
		case errors.Is(err, dataplane.ErrCaptureDone):
			return n, 0, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue
		case err != nil:
			return n, 0, err
		}
		if err := cw.write(r); err != nil {
			return n, 0, err
		}
		n++
	}
	return n, 0, nil
}
