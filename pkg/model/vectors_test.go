package model

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/gopacket/gopacket/layers"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from the model")

var (
	vip     = netip.MustParseAddr("198.18.100.1")
	client  = netip.MustParseAddr("198.18.200.7")
	muxAddr = netip.MustParseAddr("198.18.0.1")
)

// muxScenario is the mux half of testdata/vectors.json before its outputs
// are filled in: 16 buckets over servers reached in every way a route lookup
// can end.
func muxScenario() (wiretest.MuxScenario, []wiretest.PacketCase) {
	s := wiretest.MuxScenario{
		MuxAddr: muxAddr,
		Instance: forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{vip},
			PortLow: 80, PortHigh: 443, Buckets: 16, ChainWindow: 4 * time.Minute},
		Generation:  7,
		Incarnation: 1763600000,
		Servers: []wiretest.ServerVector{
			{ID: 1025, Addr: netip.MustParseAddr("198.18.0.10"), State: "active"},  // on-link, same interface
			{ID: 1026, Addr: netip.MustParseAddr("198.18.0.11"), State: "active"},  // on-link
			{ID: 1027, Addr: netip.MustParseAddr("198.18.2.12"), State: "active"},  // via gateway 198.18.0.2
			{ID: 1028, Addr: netip.MustParseAddr("198.18.3.13"), State: "active"},  // on another interface
			{ID: 1029, Addr: netip.MustParseAddr("198.18.0.14"), State: "active"},  // neighbour unknown
			{ID: 1030, Addr: netip.MustParseAddr("198.19.250.1"), State: "active"}, // no route
			{ID: 1031, Addr: netip.MustParseAddr("198.18.0.15"), State: "retired"}, // previous owner only
		},
		NextHops: []wiretest.NextHopVector{
			{Addr: netip.MustParseAddr("198.18.0.10"), Result: "tx", DstMAC: "02:be:a0:00:01:10", SrcMAC: "02:be:a0:00:00:02"},
			{Addr: netip.MustParseAddr("198.18.0.11"), Result: "tx", DstMAC: "02:be:a0:00:01:11", SrcMAC: "02:be:a0:00:00:02"},
			{Addr: netip.MustParseAddr("198.18.2.12"), Result: "tx", DstMAC: "02:be:a0:00:00:03", SrcMAC: "02:be:a0:00:00:02"},
			{Addr: netip.MustParseAddr("198.18.3.13"), Result: "redirect", DstMAC: "02:be:a0:00:01:13", SrcMAC: "02:be:a0:00:00:04"},
			{Addr: netip.MustParseAddr("198.18.0.14"), Result: "no_neigh"},
			{Addr: netip.MustParseAddr("198.19.250.1"), Result: "no_route"},
			{Addr: netip.MustParseAddr("198.18.0.15"), Result: "tx", DstMAC: "02:be:a0:00:01:15", SrcMAC: "02:be:a0:00:00:02"},
		},
	}
	type owner struct {
		cur     forwarding.ServerID
		history []forwarding.ServerID
		changed uint32
	}
	h := func(ids ...forwarding.ServerID) []forwarding.ServerID { return ids }
	owners := []owner{
		{1025, nil, 0}, {1026, h(1025), 1763700000}, {1027, nil, 0}, {1028, h(1026), 1763700100},
		{1029, nil, 0}, {1030, nil, 0}, {0, nil, 0}, {1025, h(1031), 1763700200},
		// Buckets 8-10: histories of two, four (with the retired server)
		// and six previous owners (the longest option: IHL 15).
		{1025, h(1026, 1027), 1763700300}, {1026, h(1031, 1025, 1027, 1028), 1763700400},
		{1027, h(1025, 1026, 1028, 1029, 1030, 1031), 1763700500},
	}
	for i := 0; i < int(s.Instance.Buckets); i++ {
		o := owners[i%len(owners)]
		s.Buckets = append(s.Buckets, wiretest.BucketVector{Index: uint32(i), Current: o.cur, History: o.history, Changed: o.changed})
	}

	// A client port whose flow to port dport lands in the wanted bucket.
	portFor := func(bucket uint32, dport uint16) uint16 {
		for p := uint16(40000); ; p++ {
			f := wire.Flow{Src: client, Dst: vip, SrcPort: p, DstPort: dport, Proto: wire.ProtoTCP}
			if f.Bucket(s.Instance.Buckets) == bucket {
				return p
			}
		}
	}
	seg := func(bucket uint32, dport uint16, flags int) wiretest.Segment {
		return wiretest.Segment{Flow: wire.Flow{Src: client, Dst: vip, SrcPort: portFor(bucket, dport), DstPort: dport, Proto: wire.ProtoTCP},
			Flags: flags, Seq: 1000, Ack: 2000, IPID: 77}
	}
	frame := func(ip []byte) string {
		return hex.EncodeToString(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, ip))
	}
	with := func(ip []byte, f func([]byte)) []byte { c := append([]byte(nil), ip...); f(c); return c }
	data := seg(0, 80, wiretest.ACK)
	data.Payload = []byte("GET / HTTP/1.1\r\n\r\n")
	arp := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, make([]byte, 28))
	arp[12], arp[13] = 0x08, 0x06
	other := seg(0, 80, wiretest.SYN)
	other.Flow.Dst = netip.MustParseAddr("198.18.100.99")
	udp := with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[9] = 17 })
	icmp := with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[9] = 1 })
	opts := seg(0, 80, wiretest.SYN)
	opts.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
	mptcp := seg(0, 1026, wiretest.SYN)
	cases := []wiretest.PacketCase{
		{Name: "arp passes", Input: hex.EncodeToString(arp)},
		{Name: "ipv4 to another address passes", Input: frame(other.IPv4())},
		{Name: "syn to bucket owned by on-link server", Input: frame(seg(0, 80, wiretest.SYN).IPv4())},
		{Name: "data segment with payload", Input: frame(data.IPv4())},
		{Name: "bucket with previous owner carries it in the option", Input: frame(seg(1, 443, wiretest.ACK).IPv4())},
		{Name: "server behind a gateway", Input: frame(seg(2, 80, wiretest.SYN).IPv4())},
		{Name: "server on another interface is redirected", Input: frame(seg(3, 80, wiretest.ACK).IPv4())},
		{Name: "neighbour unknown", Input: frame(seg(4, 80, wiretest.SYN).IPv4())},
		{Name: "no route to server", Input: frame(seg(5, 80, wiretest.SYN).IPv4())},
		{Name: "bucket without owner", Input: frame(seg(6, 80, wiretest.SYN).IPv4())},
		{Name: "retired previous owner is still named", Input: frame(seg(7, 80, wiretest.ACK).IPv4())},
		{Name: "bucket moved twice carries both previous owners, newest first", Input: frame(seg(8, 80, wiretest.ACK).IPv4())},
		{Name: "history of four with a retired owner", Input: frame(seg(9, 80, wiretest.ACK).IPv4())},
		{Name: "history of six fills the option room (IHL 15)", Input: frame(seg(10, 80, wiretest.ACK).IPv4())},
		{Name: "bucket that never moved beside moved ones has a 16-byte option", Input: frame(seg(11, 80, wiretest.ACK).IPv4())},
		{Name: "mptcp subflow to server id port, no option", Input: frame(mptcp.IPv4())},
		{Name: "mptcp subflow to unknown server id", Input: frame(seg(0, 5000, wiretest.SYN).IPv4())},
		{Name: "mptcp subflow to retired server id", Input: frame(seg(0, 1031, wiretest.ACK).IPv4())},
		{Name: "service port below range is closed", Input: frame(seg(0, 22, wiretest.SYN).IPv4())},
		{Name: "port 1024 outside range is closed", Input: frame(seg(0, 1024, wiretest.SYN).IPv4())},
		{Name: "udp to vip", Input: frame(udp)},
		{Name: "icmp to vip", Input: frame(icmp)},
		{Name: "ip options to vip", Input: frame(opts.IPv4())},
		{Name: "fragment to vip", Input: frame(with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[6], b[7] = 0x20, 0 }))},
		{Name: "non-first fragment to vip", Input: frame(with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[6], b[7] = 0x00, 0x10 }))},
		{Name: "ihl below 5", Input: frame(with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[0] = 0x44 }))},
		{Name: "version 6 in ipv4 frame", Input: frame(with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[0] = 0x65 }))},
		{Name: "total length below header", Input: frame(with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[2], b[3] = 0, 19 }))},
		{Name: "total length beyond packet", Input: frame(with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[2], b[3] = 0, 200 }))},
		{Name: "tcp header cut short", Input: frame(seg(0, 80, wiretest.SYN).IPv4()[:30])},
		{Name: "tcp data offset below 5", Input: frame(with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[32] = 0x40 }))},
		{Name: "tcp data offset beyond total length", Input: frame(with(seg(0, 80, wiretest.SYN).IPv4(), func(b []byte) { b[32] = 0xf0 }))},
		{Name: "ethernet padding travels along", Input: hex.EncodeToString(append(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, seg(0, 80, wiretest.ACK).IPv4()), 0, 0, 0, 0, 0, 0))},
	}
	// The fixed tot_len edits above leave the IPv4 checksum stale, as an
	// attacker's packet would have it; the mux does not verify it (the
	// server's stack does).
	return s, cases
}

// modelMux builds the reference mux for a scenario.
func modelMux(t testing.TB, s *wiretest.MuxScenario) *Mux {
	table, err := s.Table()
	if err != nil {
		t.Fatal(err)
	}
	hops := map[netip.Addr]NextHop{}
	for _, h := range s.NextHops {
		d, _ := net.ParseMAC(h.DstMAC)
		sm, _ := net.ParseMAC(h.SrcMAC)
		hops[h.Addr] = NextHop{Result: h.Result, DstMAC: d, SrcMAC: sm}
	}
	m := &Mux{Addr: s.MuxAddr, VIPs: map[netip.Addr]*VIP{}, NextHops: func(a netip.Addr) NextHop {
		if h, ok := hops[a]; ok {
			return h
		}
		return NextHop{Result: "no_route"}
	}}
	for _, v := range s.Instance.VIPs {
		m.VIPs[v] = &VIP{Instance: s.Instance, Table: table, Generation: s.Generation, Incarnation: s.Incarnation}
	}
	return m
}

func hashVectors() []wiretest.HashVector {
	var out []wiretest.HashVector
	tuples := []wire.Flow{
		{Src: netip.MustParseAddr("0.0.0.0"), Dst: netip.MustParseAddr("0.0.0.0"), Proto: 6},
		{Src: netip.MustParseAddr("198.18.200.7"), Dst: netip.MustParseAddr("198.18.100.1"), SrcPort: 40000, DstPort: 80, Proto: 6},
		{Src: netip.MustParseAddr("198.18.200.7"), Dst: netip.MustParseAddr("198.18.100.1"), SrcPort: 40001, DstPort: 80, Proto: 6},
		{Src: netip.MustParseAddr("198.19.255.255"), Dst: netip.MustParseAddr("198.18.0.1"), SrcPort: 65535, DstPort: 443, Proto: 6},
		{Src: netip.MustParseAddr("255.255.255.255"), Dst: netip.MustParseAddr("255.255.255.255"), SrcPort: 65535, DstPort: 65535, Proto: 17},
		{Src: netip.MustParseAddr("198.18.1.2"), Dst: netip.MustParseAddr("198.18.100.1"), SrcPort: 1, DstPort: 1025, Proto: 6},
	}
	for i, f := range tuples {
		for _, b := range []uint32{1, 16, 65537, 6_400_000} {
			h := f.Hash()
			out = append(out, wiretest.HashVector{Src: f.Src, Dst: f.Dst, SrcPort: f.SrcPort, DstPort: f.DstPort, Proto: f.Proto,
				Hash: h, Buckets: b, Bucket: wire.BucketOf(h, b)})
			_ = i
		}
	}
	return out
}

func runCase(m *Mux, c *wiretest.PacketCase) error {
	in, err := hex.DecodeString(c.Input)
	if err != nil {
		return err
	}
	r := m.Process(in)
	c.Action, c.Counter, c.Output = string(r.Action), r.Counter, ""
	if r.Action != Drop {
		c.Output = hex.EncodeToString(r.Output)
	}
	return nil
}

func TestVectorsMatchModel(t *testing.T) {
	if *update {
		s, cases := muxScenario()
		m := modelMux(t, &s)
		for i := range cases {
			if err := runCase(m, &cases[i]); err != nil {
				t.Fatal(err)
			}
		}
		s.Cases = cases
		ms, mcases := maglevScenario()
		mm := modelMux(t, &ms)
		for i := range mcases {
			if err := runCase(mm, &mcases[i]); err != nil {
				t.Fatal(err)
			}
		}
		ms.Cases = mcases
		as, acases := agentScenario()
		a := modelAgent(&as)
		for i := range acases {
			if err := runAgentCase(a, &acases[i]); err != nil {
				t.Fatal(err)
			}
		}
		as.Cases = acases
		v := wiretest.Vectors{
			Maglev:   ms,
			Agent:    as,
			Comment:  "Golden vectors of the Beamer wire format and data-path decisions (docs/wire-format.md). Checked against the BPF programs (pkg/dataplane tests) and the Go model (pkg/model tests). Regenerate with: go test ./pkg/model -run TestVectorsMatchModel -update",
			FlowHash: hashVectors(),
			Mux:      s,
		}
		b, _ := json.MarshalIndent(v, "", "  ")
		if err := os.WriteFile(wiretest.VectorsPath(), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := wiretest.LoadVectors()
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range v.FlowHash {
		f := wire.Flow{Src: h.Src, Dst: h.Dst, SrcPort: h.SrcPort, DstPort: h.DstPort, Proto: h.Proto}
		if got := f.Hash(); got != h.Hash {
			t.Errorf("hash %+v = %#x, vector %#x", f, got, h.Hash)
		}
		if got := wire.BucketOf(h.Hash, h.Buckets); got != h.Bucket {
			t.Errorf("bucket of %#x in %d = %d, vector %d", h.Hash, h.Buckets, got, h.Bucket)
		}
	}
	checkAgentVectors(t, v)
	checkMuxCases(t, modelMux(t, &v.Maglev), v.Maglev.Cases)
	checkMuxCases(t, modelMux(t, &v.Mux), v.Mux.Cases)
}

func checkMuxCases(t *testing.T, m *Mux, cases []wiretest.PacketCase) {
	for _, want := range cases {
		got := want
		if err := runCase(m, &got); err != nil {
			t.Fatal(err)
		}
		if got.Action != want.Action || got.Counter != want.Counter || got.Output != want.Output {
			t.Errorf("%s: model %s/%s, vector %s/%s\nmodel  %s\nvector %s", want.Name, got.Action, got.Counter, want.Action, want.Counter, got.Output, want.Output)
		}
	}
}

// maglevScenario is a Maglev-strategy VIP: 13 table entries over three
// servers; its cases run in order and fill the connection table.
func maglevScenario() (wiretest.MuxScenario, []wiretest.PacketCase) {
	base, _ := muxScenario()
	mvip := netip.MustParseAddr("198.18.100.2")
	s := wiretest.MuxScenario{
		MuxAddr: muxAddr,
		Instance: forwarding.Instance{Name: "shop", Strategy: forwarding.StrategyMaglev, VIPs: []netip.Addr{mvip},
			PortLow: 80, PortHigh: 443, Buckets: 13},
		Generation: 3,
		Servers:    base.Servers[:3],
		NextHops:   base.NextHops[:3],
	}
	for i := 0; i < 13; i++ {
		s.Buckets = append(s.Buckets, wiretest.BucketVector{Index: uint32(i), Current: forwarding.ServerID(1025 + (i*7)%3)})
	}
	seg := func(sport, dport uint16, flags int) string {
		ip := wiretest.Segment{Flow: wire.Flow{Src: client, Dst: mvip, SrcPort: sport, DstPort: dport, Proto: wire.ProtoTCP},
			Flags: flags, Seq: 1, Ack: 2, IPID: 5}.IPv4()
		return hex.EncodeToString(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, ip))
	}
	udp := wiretest.Segment{Flow: wire.Flow{Src: client, Dst: mvip, SrcPort: 1, DstPort: 80, Proto: wire.ProtoTCP}, Flags: wiretest.SYN}.IPv4()
	udp[9] = 17
	cases := []wiretest.PacketCase{
		{Name: "syn of a new connection is remembered", Input: seg(50001, 80, wiretest.SYN)},
		{Name: "next packet of the connection hits", Input: seg(50001, 80, wiretest.ACK)},
		{Name: "mid-connection packet unknown here misses and is remembered", Input: seg(50002, 443, wiretest.ACK)},
		{Name: "its next packet hits", Input: seg(50002, 443, wiretest.ACK)},
		{Name: "syn on an existing entry chooses again", Input: seg(50002, 443, wiretest.SYN)},
		{Name: "port above 1024 is hashed like any flow, not by server id", Input: seg(50003, 1026, wiretest.SYN)},
		{Name: "unknown port above 1024 misses", Input: seg(50004, 5000, wiretest.ACK)},
		{Name: "closed service port", Input: seg(50005, 22, wiretest.SYN)},
		{Name: "udp to a maglev vip", Input: hex.EncodeToString(wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, udp))},
	}
	return s, cases
}
