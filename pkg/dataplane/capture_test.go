package dataplane

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// captureFrame serializes an Ethernet frame of the given layers.
func captureFrame(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: layers.EthernetTypeIPv4}
	if ip6, ok := ls[0].(*layers.IPv6); ok && ip6 != nil {
		eth.EthernetType = layers.EthernetTypeIPv6
	}
	opts := gopacket.SerializeOptions{FixLengths: true} // checksums: the capture reads none
	if err := gopacket.SerializeLayers(buf, opts, append([]gopacket.SerializableLayer{eth}, ls...)...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// captureIP is the bytes of an IPv4 packet (no Ethernet) of proto to dst:dport.
func captureIP(t *testing.T, proto layers.IPProtocol, src, dst netip.Addr, sport, dport uint16) []byte {
	t.Helper()
	ip := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: src.AsSlice(), DstIP: dst.AsSlice()}
	var l4 gopacket.SerializableLayer
	if proto == layers.IPProtocolTCP {
		tcp := &layers.TCP{SrcPort: layers.TCPPort(sport), DstPort: layers.TCPPort(dport), SYN: true, Window: 1000}
		tcp.SetNetworkLayerForChecksum(ip)
		l4 = tcp
	} else {
		udp := &layers.UDP{SrcPort: layers.UDPPort(sport), DstPort: layers.UDPPort(dport)}
		udp.SetNetworkLayerForChecksum(ip)
		l4 = udp
	}
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		ip, l4, gopacket.Payload("a client's datagram, longer than the snaplen of the test")); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCaptureFilterInKernel: the filter of bpf/include/capture.h on the
// mux's mux-rx point, by BPF_PROG_TEST_RUN: the 5-tuple of the innermost
// packet (plain, IP-in-IP, GUE), the other protocol, port or family left
// out, the snaplen applied, the kernel's count stopping at 3 matches, and
// the filter off after Close.
func TestCaptureFilterInKernel(t *testing.T) {
	pins := netlabtest.PinDir(t, "capf")
	m, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), PinDir: pins})
	must(t, err)
	t.Cleanup(func() { m.Close() })

	client, vip := netip.MustParseAddr("198.18.1.10"), netip.MustParseAddr("198.18.100.7")
	mux, server := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.10")
	outer := func(proto layers.IPProtocol) *layers.IPv4 {
		return &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: mux.AsSlice(), DstIP: server.AsSlice()}
	}
	match := captureIP(t, layers.IPProtocolUDP, client, vip, 4000, 53)
	gue := append([]byte{0x00, 4, 0, 0}, match...)
	plain := func(b []byte) gopacket.SerializableLayer { return gopacket.Payload(b) }
	type frame struct {
		name string
		b    []byte
		want bool
	}
	frames := []frame{
		{"plain match", captureFrame(t, plain(match)), true},
		{"other port", captureFrame(t, plain(captureIP(t, layers.IPProtocolUDP, client, vip, 4000, 54))), false},
		{"other protocol", captureFrame(t, plain(captureIP(t, layers.IPProtocolTCP, client, vip, 4000, 53))), false},
		{"other source", captureFrame(t, plain(captureIP(t, layers.IPProtocolUDP, vip, vip, 4000, 53))), false},
		{"IPv6", captureFrame(t, &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolUDP,
			SrcIP: net.ParseIP("2001:db8::1"), DstIP: net.ParseIP("2001:db8::7")},
			&layers.UDP{SrcPort: 4000, DstPort: 53}), false},
		{"IP-in-IP match", captureFrame(t, outer(layers.IPProtocolIPv4), gopacket.Payload(match)), true},
		{"GUE to another port", captureFrame(t, outer(layers.IPProtocolUDP), &layers.UDP{SrcPort: 50000, DstPort: 6081}, gopacket.Payload(gue)), false},
		{"GUE match", captureFrame(t, outer(layers.IPProtocolUDP), &layers.UDP{SrcPort: 50000, DstPort: 6080}, gopacket.Payload(gue)), true},
		{"a fourth match, beyond the count", captureFrame(t, plain(match)), false},
	}
	c, err := StartCapture(pins, CaptureOptions{Count: 3, Snaplen: 40, Filter: CaptureFilter{
		Proto: 17, Src: client, Dst: vip, SrcPort: 4000, DstPort: 53, Points: []CapturePoint{CaptureMuxRx}, GUEPort: 6080}})
	must(t, err)
	defer c.Close()
	if _, err := StartCapture(pins, CaptureOptions{Count: 1, Snaplen: 40}); !errors.Is(err, ErrCaptureBusy) {
		t.Fatalf("a second capture at once: %v, want %v", err, ErrCaptureBusy)
	}
	var want []frame
	for _, f := range frames {
		if _, err := m.objs.BeamerMux.Run(&ebpf.RunOptions{Data: f.b, Context: xdpMD{DataEnd: uint32(len(f.b))}}); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if f.want {
			want = append(want, f)
		}
	}
	for _, f := range want {
		r, err := c.Next(time.Now().Add(5 * time.Second))
		if err != nil {
			t.Fatalf("record of %s: %v", f.name, err)
		}
		if r.Point != CaptureMuxRx || r.Length != len(f.b) || string(r.Data) != string(f.b[:40]) {
			t.Fatalf("record of %s: point %v, length %d, data %x; want mux-rx, %d, %x", f.name, r.Point, r.Length, r.Data, len(f.b), f.b[:40])
		}
		if time.Since(r.Time).Abs() > time.Minute {
			t.Fatalf("record of %s at %v: the clock conversion is off", f.name, r.Time)
		}
	}
	if _, err := c.Next(time.Now().Add(200 * time.Millisecond)); !errors.Is(err, ErrCaptureDone) {
		t.Fatalf("after 3 records of a count of 3: %v, want %v", err, ErrCaptureDone)
	}
	st, err := ReadCaptureState(pins)
	must(t, err)
	if !st.Enabled || st.Remaining != 0 || st.Lost != 0 {
		t.Fatalf("kernel filter after the run: %+v, want enabled, 0 remaining, 0 lost", st)
	}
	must(t, c.Close())
	if st, err := ReadCaptureState(pins); err != nil || st.Enabled {
		t.Fatalf("after Close: %+v (%v), want off", st, err)
	}
	if _, err := StartCapture(pins+"-none", CaptureOptions{Count: 1, Snaplen: 1}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("capture of a daemon that is not there: %v", err)
	}
}

func TestCaptureOptionsRefused(t *testing.T) {
	v4, v6 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("2001:db8::1")
	for _, o := range []CaptureOptions{
		{Count: 0, Snaplen: 100},
		{Count: CaptureMaxCount + 1, Snaplen: 100},
		{Count: 1, Snaplen: 0},
		{Count: 1, Snaplen: CaptureSnapMax + 1},
		{Count: 1, Snaplen: 100, Duration: -time.Second},
		{Count: 1, Snaplen: 100, Filter: CaptureFilter{Src: v4, Dst: v6}},
		{Count: 1, Snaplen: 100, Filter: CaptureFilter{Points: []CapturePoint{99}}},
	} {
		if _, err := o.encode(0); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	c, err := CaptureOptions{Count: 5, Snaplen: 64, Duration: time.Second, Filter: CaptureFilter{Dst: v6, DstPort: 443}}.encode(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if c.Family != 6 || c.Match != captureMatchDst|captureMatchDport || c.Dst != v6.As16() || c.DeadlineNs != uint64(time.Minute+time.Second) || c.Remaining != 5 {
		t.Fatalf("encoded %+v", c)
	}
	for _, n := range []string{"mux-rx", "agent-chain", "agent-xdp-up"} {
		if p, err := ParseCapturePoint(n); err != nil || p.String() != n {
			t.Errorf("point %q: %v %v", n, p, err)
		}
	}
	if _, err := ParseCapturePoint("mux-rxx"); err == nil {
		t.Error("mux-rxx accepted")
	}
}
