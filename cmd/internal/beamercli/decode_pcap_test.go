package beamercli

import (
	"bytes"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// samplePcap is the committed capture docs/wire-format.md describes. It is
// made by TestSamplePcap from the Go model of the mux and the agent (the
// reference both BPF programs are checked against), never captured.
// Regenerate with BEAMER_UPDATE_PCAP=1 go test ./cmd/beamer -run TestSamplePcap.
const samplePcap = "../../../testdata/pcap/beamer-sample.pcap"

var (
	sampleVIP    = netip.MustParseAddr("198.18.100.1")
	sampleMux    = netip.MustParseAddr("198.18.0.1")
	sampleServer = map[forwarding.ServerID]netip.Addr{1025: netip.MustParseAddr("198.18.0.10"), 1026: netip.MustParseAddr("198.18.0.11"), 1027: netip.MustParseAddr("198.18.0.12")}
	serverMAC    = net.HardwareAddr{0x02, 0xbe, 0xa0, 0x00, 0x00, 0x10}
)

// sampleRig is the Go model of the mux and of server 1025's agent the
// sample captures are made with: instance web on 8 buckets, the even ones
// moved twice (history 1026, 1027), in the given encapsulation.
type sampleRig struct {
	mux    *model.Mux
	agent  *model.Agent
	client netip.Addr
}

func newSampleRig(encap forwarding.Encap) *sampleRig {
	tab := &forwarding.Table{Incarnation: 1_700_000_000, Generation: 7, Buckets: make([]forwarding.Bucket, 8), Servers: map[forwarding.ServerID]forwarding.Server{}}
	for id, a := range sampleServer {
		tab.Servers[id] = forwarding.Server{Addr: a, State: forwarding.Active}
	}
	for i := range tab.Buckets {
		tab.Buckets[i].Current = 1025
		if i%2 == 0 {
			tab.Buckets[i].History = forwarding.Chain{1026, 1027}
			tab.Buckets[i].Changed = 1_700_000_000
		}
	}
	web := forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{sampleVIP}, PortLow: 80, PortHigh: 80,
		Buckets: 8, ChainWindow: forwarding.DefaultChainWindow, Encap: encap}
	tx := func(netip.Addr) model.NextHop {
		return model.NextHop{Result: "tx", DstMAC: serverMAC, SrcMAC: wiretest.MuxMAC}
	}
	return &sampleRig{client: netip.MustParseAddr("198.18.1.5"),
		mux: &model.Mux{Addr: sampleMux, VIPs: map[netip.Addr]*model.VIP{sampleVIP: {Instance: web, Table: tab, Generation: 7, Incarnation: 1_700_000_000}}, NextHops: tx},
		agent: &model.Agent{Addr: sampleServer[1025], VIPs: map[netip.Addr]model.AgentVIP{sampleVIP: {Buckets: 8, Window: 240}},
			Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")}, Socket: func(_, _ netip.AddrPort) model.Socket { return model.NoSocket },
			CookieValid: func([]byte) bool { return false }, NextHops: tx, Now: 1_700_000_060, MaxSkew: 3600, MaxGenJump: 1 << 20,
			Seen: map[uint32]*[2]uint64{0: {}}, Changed: map[[2]uint32]uint32{}}}
}

// flowIn is the client's first flow to VIP:80 in a bucket with (or
// without) a history.
func (r *sampleRig) flowIn(history bool) wire.Flow {
	for p := uint16(40000); ; p++ {
		f := wire.Flow{Src: r.client, Dst: sampleVIP, SrcPort: p, DstPort: 80, Proto: wire.ProtoTCP}
		if (f.Bucket(8)%2 == 0) == history {
			return f
		}
	}
}

// through is the frame a model sent on.
func through(t *testing.T, r model.Result) []byte {
	t.Helper()
	if r.Action != model.TX && r.Action != model.Redirect {
		t.Fatalf("model: %s %s", r.Action, r.Counter)
	}
	return r.Output
}

// sampleFrames: (1) a client's SYN through the mux, bucket without history;
// (2) a data segment of an older connection whose bucket moved twice,
// through the mux: the option names both previous owners; (3) the same
// packet daisy-chained by the current owner (no socket for it) to the
// most recent previous owner, hop 1; (4) IP-in-IP without option (what a
// Maglev instance sends); (5) the server's reply straight to the client (DSR:
// not encapsulated).
func sampleFrames(t *testing.T) [][]byte {
	t.Helper()
	r := newSampleRig("")
	mux, agent, client, flowIn := r.mux, r.agent, r.client, r.flowIn
	syn := wiretest.Segment{Flow: flowIn(false), Flags: wiretest.SYN, Seq: 1000}
	f1 := through(t, mux.Process(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, syn.IPv4())))
	data := wiretest.Segment{Flow: flowIn(true), Flags: wiretest.ACK, Seq: 5000, Ack: 9000, Payload: bytes.Repeat([]byte("beamer"), 12)}
	f2 := through(t, mux.Process(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, data.IPv4())))
	f3 := through(t, agent.Process(f2))
	plain, err := wire.Encapsulate(syn.IPv4(), sampleMux, sampleServer[1026], nil)
	if err != nil {
		t.Fatal(err)
	}
	f4 := wiretest.Frame(wiretest.MuxMAC, serverMAC, plain)
	reply := wiretest.Segment{Flow: wire.Flow{Src: sampleVIP, Dst: client, SrcPort: 80, DstPort: syn.Flow.SrcPort, Proto: wire.ProtoTCP}, Flags: wiretest.SYNACK, Seq: 7000, Ack: 1001}
	f5 := wiretest.Frame(serverMAC, wiretest.ClientMAC, reply.IPv4())
	return [][]byte{f1, f2, f3, f4, f5}
}

func buildSamplePcap(t *testing.T) []byte {
	var buf bytes.Buffer
	w := pcapgo.NewWriterNanos(&buf)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_060, 0)
	for i, f := range sampleFrames(t) {
		ci := gopacket.CaptureInfo{Timestamp: at.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(f), Length: len(f)}
		if err := w.WritePacket(ci, f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestSamplePcap: the committed sample is exactly what the model makes
// today, and `beamer decode-pcap` prints its options exactly.
func TestSamplePcap(t *testing.T) {
	made := buildSamplePcap(t)
	if os.Getenv("BEAMER_UPDATE_PCAP") == "1" {
		if err := os.WriteFile(samplePcap, made, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	committed, err := os.ReadFile(samplePcap)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(made, committed) {
		t.Fatalf("%s differs from what the model makes now: regenerate it with BEAMER_UPDATE_PCAP=1 go test ./cmd/beamer -run TestSamplePcap and update docs/wire-format.md", samplePcap)
	}
	got := ctlOut(t, "decode-pcap", samplePcap)
	want := `#1 2023-11-14T22:14:20Z 198.18.0.1 > 198.18.0.10 beamer hop 0 incarnation 1700000000 generation 7 | 198.18.1.5:40000 > 198.18.100.1:80 [S]
#2 2023-11-14T22:14:20.001Z 198.18.0.1 > 198.18.0.10 beamer hop 0 incarnation 1700000000 generation 7 changed 2023-11-14T22:13:20Z prev [198.18.0.11 198.18.0.12] | 198.18.1.5:40005 > 198.18.100.1:80 [.]
#3 2023-11-14T22:14:20.002Z 198.18.0.10 > 198.18.0.11 beamer hop 1 incarnation 1700000000 generation 7 changed 2023-11-14T22:13:20Z prev [198.18.0.11 198.18.0.12] | 198.18.1.5:40005 > 198.18.100.1:80 [.]
#4 2023-11-14T22:14:20.003Z 198.18.0.1 > 198.18.0.11 ipip, no beamer option | 198.18.1.5:40000 > 198.18.100.1:80 [S]
5 packets (Ethernet), 4 IP-in-IP, 0 GUE
`
	if got != want {
		t.Errorf("decode-pcap:\n%s\nwant:\n%s", got, want)
	}
}

// TestDecodePcapHostile: a truncated file, a file that is not a capture and
// an IP-in-IP packet with a broken option give errors or a counted line,
// never a panic.
func TestDecodePcapHostile(t *testing.T) {
	good := buildSamplePcap(t)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := dir + "/" + name
		os.WriteFile(p, b, 0o644)
		return p
	}
	if err := run("decode-pcap", write("junk.pcap", []byte("not a capture at all"))); err == nil {
		t.Error("junk accepted")
	}
	if err := run("decode-pcap", write("cut.pcap", good[:len(good)-7])); err == nil {
		t.Error("truncated capture accepted")
	}
	bad := bytes.Clone(good)
	// Packet 1's option type (pcap header 24 + record header 16 + Ethernet 14 + 20).
	if bad[24+16+14+20] != wire.OptionType {
		t.Fatalf("offset: %#x", bad[24+16+14+20])
	}
	bad[24+16+14+20+1] = 17 // option length not 16 + 4n
	got := ctlOut(t, "decode-pcap", write("bad.pcap", bad))
	if !bytes.Contains([]byte(got), []byte("#1 2023-11-14T22:14:20Z 198.18.0.1 > 198.18.0.10 ipip: wire: not a Beamer option")) {
		t.Errorf("broken option:\n%s", got)
	}
}
