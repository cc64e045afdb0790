package beamercli

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// gueFrames: (1) a SYN through a GUE mux (model), bucket without history;
// (2) a data segment whose bucket moved twice; (3) it daisy-chained by the
// agent (model) in GUE, hop 1; (4) GUE over IPv6 with 16-byte previous
// owners (the Go model of the layout); (5) GUE whose private data is
// broken; (6) UDP to another port (not ours); (7) IP-in-IP beside them.
func gueFrames(t *testing.T) [][]byte {
	t.Helper()
	r := newSampleRig(forwarding.EncapGUE)
	mux, agent, flowIn := r.mux, r.agent, r.flowIn
	syn := wiretest.Segment{Flow: flowIn(false), Flags: wiretest.SYN, Seq: 1000}
	f1 := through(t, mux.Process(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, syn.IPv4())))
	data := wiretest.Segment{Flow: flowIn(true), Flags: wiretest.ACK, Seq: 5000, Ack: 9000, Payload: []byte("beamer")}
	f2 := through(t, mux.Process(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, data.IPv4())))
	f3 := through(t, agent.Process(f2))

	// IPv6 outer, IPv6 inner: built by the wire model (the layout of
	// docs/wire-format.md), previous owners as IPv6 addresses.
	in6 := make([]byte, 60)
	in6[0], in6[5], in6[6], in6[7] = 0x60, 20, wire.ProtoTCP, 64
	copy(in6[8:], netip.MustParseAddr("2001:db8:c::5").AsSlice())
	copy(in6[24:], netip.MustParseAddr("2001:db8:100::1").AsSlice())
	in6[40], in6[41], in6[42], in6[43], in6[52], in6[53] = 0x9c, 0x41, 0, 80, 0x50, 0x10
	opt6 := &wire.Option{Generation: 7, Incarnation: 1_700_000_000, Changed: 1_700_000_000,
		Prev: []netip.Addr{netip.MustParseAddr("2001:db8::11"), netip.MustParseAddr("2001:db8::12")}}
	g6, err := wire.EncapsulateGUE(in6, netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::10"), 0xc123, 6080, opt6)
	if err != nil {
		t.Fatal(err)
	}
	f4 := wiretest.Frame(wiretest.MuxMAC, serverMAC, g6)
	f4[12], f4[13] = 0x86, 0xdd
	f5 := bytes.Clone(f1)
	f5[14+28+4] = 0x44 // private data's type byte
	f6 := bytes.Clone(f1)
	f6[14+22], f6[14+23] = 0x1f, 0x90 // UDP to 8080
	plain, err := wire.Encapsulate(syn.IPv4(), sampleMux, sampleServer[1026], nil)
	if err != nil {
		t.Fatal(err)
	}
	f7 := wiretest.Frame(wiretest.MuxMAC, serverMAC, plain)
	return [][]byte{f1, f2, f3, f4, f5, f6, f7}
}

// TestDecodeGUE: `beamer decode` reads both encapsulations and both outer
// families from a pcap file, says why a broken one is not Beamer's, and
// leaves other UDP alone.
func TestDecodeGUE(t *testing.T) {
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_060, 0)
	for i, f := range gueFrames(t) {
		ci := gopacket.CaptureInfo{Timestamp: at.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(f), Length: len(f)}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	path := t.TempDir() + "/gue.pcap"
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got := ctlOut(t, "decode", path)
	want := `#1 2023-11-14T22:14:20Z 198.18.0.1 > 198.18.0.10 gue 51233 > 6080 beamer hop 0 incarnation 1700000000 generation 7 | 198.18.1.5:40000 > 198.18.100.1:80 [S]
#2 2023-11-14T22:14:20.001Z 198.18.0.1 > 198.18.0.10 gue 54482 > 6080 beamer hop 0 incarnation 1700000000 generation 7 changed 2023-11-14T22:13:20Z prev [198.18.0.11 198.18.0.12] | 198.18.1.5:40005 > 198.18.100.1:80 [.]
#3 2023-11-14T22:14:20.002Z 198.18.0.10 > 198.18.0.11 gue 54482 > 6080 beamer hop 1 incarnation 1700000000 generation 7 changed 2023-11-14T22:13:20Z prev [198.18.0.11 198.18.0.12] | 198.18.1.5:40005 > 198.18.100.1:80 [.]
#4 2023-11-14T22:14:20.003Z 2001:db8::1 > 2001:db8::10 gue 49443 > 6080 beamer hop 0 incarnation 1700000000 generation 7 changed 2023-11-14T22:13:20Z prev [2001:db8::11 2001:db8::12] | [2001:db8:c::5]:40001 > [2001:db8:100::1]:80 [.]
#5 2023-11-14T22:14:20.004Z 198.18.0.1 > 198.18.0.10 gue 51233 > 6080 gue: wire: not a Beamer option: 44 10
#7 2023-11-14T22:14:20.006Z 198.18.0.1 > 198.18.0.11 ipip, no beamer option | 198.18.1.5:40000 > 198.18.100.1:80 [S]
7 packets (Ethernet), 1 IP-in-IP, 5 GUE
`
	if got != want {
		t.Errorf("decode:\n%s\nwant:\n%s", got, want)
	}
	// Another instance's port is read only when named.
	if got := ctlOut(t, "decode", "--gue-port", "8080", path); !strings.Contains(got, "#6 ") || strings.Contains(got, "#1 ") {
		t.Errorf("--gue-port 8080:\n%s", got)
	}
	js := ctlOut(t, "decode", "-o", "json", path)
	if !strings.Contains(js, `"encap": "gue"`) || !strings.Contains(js, `"dst_port": 6080`) {
		t.Errorf("json:\n%s", js)
	}
}

// TestDecodeHex: the GUE vectors' frames decode from hex (as tcpdump -xx or
// a vector shows them), Ethernet or bare IP; junk is an error, not a panic.
func TestDecodeHex(t *testing.T) {
	v, err := wiretest.LoadGUEVectors()
	if err != nil {
		t.Fatal(err)
	}
	var frame string
	for _, c := range v.Mux.Cases {
		if strings.Contains(c.Name, "bucket moved twice") {
			frame = c.Output
		}
	}
	if frame == "" {
		t.Fatal("no vector")
	}
	b, _ := hex.DecodeString(frame)
	ip := hex.EncodeToString(b[14:])
	got := ctlOut(t, "decode", "--gue-port", "7070", "--hex", frame, ip)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "gue ") || !strings.Contains(lines[0], "> 7070 beamer hop 0 incarnation 1763600000 generation 7 changed") ||
		strings.TrimPrefix(lines[0], "#1 ") != strings.TrimPrefix(lines[1], "#2 ") || lines[2] != "2 packets (hex), 0 IP-in-IP, 2 GUE" {
		t.Errorf("hex:\n%s", got)
	}
	for _, bad := range []string{"zz", "4500"} {
		if bad == "zz" {
			if err := run("decode", "--hex", bad); err == nil {
				t.Error("zz accepted")
			}
			continue
		}
		if got := ctlOut(t, "decode", "--hex", bad); !strings.Contains(got, "1 packets (hex), 0 IP-in-IP, 0 GUE") {
			t.Errorf("short packet: %s", got)
		}
	}
}
