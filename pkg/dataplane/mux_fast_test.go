package dataplane

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// muxFastPair loads the vector scenario's mux twice, with and without the
// straight-line path for its most common packet (bpf/include/mux_fast.h),
// in one namespace whose routes end as the vectors say.
func muxFastPair(t *testing.T) (fast, general *Mux, bench *muxBench, vip netip.Addr) {
	v, fast := loadVectorMux(t)
	muxFastShapeOff = true
	_, general = loadVectorMux(t)
	muxFastShapeOff = false
	return fast, general, newMuxBench(t, &v.Mux), v.Mux.Instance.VIPs[0]
}

// muxOutcome is what one packet did: the action, the output bytes, and how
// every decision counter and the traffic counters moved.
type muxOutcome struct {
	action   string
	out      []byte
	counters map[string]uint64
	traffic  string
}

func runMuxOutcome(t *testing.T, m *Mux, bench *muxBench, frame []byte) muxOutcome {
	t.Helper()
	before, err := m.Counters()
	must(t, err)
	vb, sb, err := m.Traffic()
	must(t, err)
	action, out := runXDP(t, bench.ns, bench.ifindex, m.Program(), bytes.Clone(frame))
	after, err := m.Counters()
	must(t, err)
	va, sa, err := m.Traffic()
	must(t, err)
	moved := map[string]uint64{}
	for k, n := range after {
		if d := n - before[k]; d != 0 {
			moved[k] = d
		}
	}
	j := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	return muxOutcome{action: action, out: out, counters: moved, traffic: j(vb) + j(sb) + "->" + j(va) + j(sa)}
}

func sameOutcome(a, b muxOutcome) bool {
	if a.action != b.action || !bytes.Equal(a.out, b.out) || len(a.counters) != len(b.counters) {
		return false
	}
	for k, n := range a.counters {
		if b.counters[k] != n {
			return false
		}
	}
	return true
}

// trafficMoved: the traffic counters' change, compared apart (each mux has
// its own before).
func trafficMoved(o muxOutcome) string {
	i := bytes.Index([]byte(o.traffic), []byte("->"))
	return o.traffic[i+2:]
}

// TestMuxFastShapeChecks takes the mux's most common packet (IPv4 TCP to a
// service port of a Beamer VIP whose bucket never moved, IP-in-IP) and
// breaks one thing of it at a time: with and without the straight-line
// path, each packet must get the same action, output bytes and counters;
// the packet itself must be forwarded by bucket with the 16-byte option.
// One case per check the straight-line path makes, so that a check it lost
// shows here even when no vector breaks it.
func TestMuxFastShapeChecks(t *testing.T) {
	fast, general, bench, vip := muxFastPair(t)
	client := netip.MustParseAddr("198.18.200.7")
	const eth = 14
	seg := func(flags int, dport uint16) []byte {
		return wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Segment{
			Flow:  wire.Flow{Src: client, Dst: vip, SrcPort: 41000, DstPort: dport, Proto: wire.ProtoTCP},
			Flags: flags, Seq: 1, Ack: 1, Payload: []byte("hello")}.IPv4())
	}
	// A source port whose bucket never moved: the plain 16-byte option.
	var good []byte
	for sp := uint16(41000); sp < 41100 && good == nil; sp++ {
		f := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Segment{
			Flow:  wire.Flow{Src: client, Dst: vip, SrcPort: sp, DstPort: 80, Proto: wire.ProtoTCP},
			Flags: wiretest.ACK, Seq: 1, Ack: 1, Payload: []byte("hello")}.IPv4())
		runMuxOutcome(t, fast, bench, f) // both see every packet: their traffic counters stay alike
		if o := runMuxOutcome(t, general, bench, f); o.counters["fwd_bucket"] == 1 && o.counters["fwd_with_previous"] == 0 && o.out[eth] == 0x49 {
			good = f
		}
	}
	if good == nil {
		t.Fatal("no source port reaches a bucket that never moved")
	}
	// A source port whose bucket moved: its previous owners in the option
	// (the straight-line path hands it to the general decision with the
	// bucket it read; for UDP the current owner ends the list).
	moved := func(sport uint16, flags int) []byte {
		return wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Segment{
			Flow:  wire.Flow{Src: client, Dst: vip, SrcPort: sport, DstPort: 80, Proto: wire.ProtoTCP},
			Flags: flags, Seq: 1, Ack: 1, Payload: []byte("hello")}.IPv4())
	}
	var movedPort uint16
	for sp := uint16(42000); sp < 42400 && movedPort == 0; sp++ {
		f := moved(sp, wiretest.ACK)
		runMuxOutcome(t, fast, bench, f)
		if o := runMuxOutcome(t, general, bench, f); o.counters["fwd_with_previous"] == 1 {
			movedPort = sp
		}
	}
	if movedPort == 0 {
		t.Fatal("no source port reaches a bucket that moved")
	}
	movedUDP := func(sport uint16) []byte {
		return wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Datagram{
			Flow: wire.Flow{Src: client, Dst: vip, SrcPort: sport, DstPort: 53}, Payload: []byte("a query of twenty-four b")}.IPv4())
	}
	var movedUDPPort uint16
	for sp := uint16(42000); sp < 42400 && movedUDPPort == 0; sp++ {
		f := movedUDP(sp)
		runMuxOutcome(t, fast, bench, f)
		if o := runMuxOutcome(t, general, bench, f); o.counters["fwd_with_previous"] == 1 {
			movedUDPPort = sp
		}
	}
	if movedUDPPort == 0 {
		t.Fatal("no source port reaches a bucket that moved, for UDP")
	}
	sport := binary.BigEndian.Uint16(good[eth+20:])
	ipc := func(change func(h []byte)) func() []byte {
		return func() []byte { f := bytes.Clone(good); change(f[eth:]); ipv4Resum(f); return f }
	}
	udp := func(dport uint16, payload []byte) []byte {
		return wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Datagram{
			Flow: wire.Flow{Src: client, Dst: vip, SrcPort: sport, DstPort: dport}, Payload: payload}.IPv4())
	}
	cases := []shapeCase{
		{"the shape itself", func() []byte { return bytes.Clone(good) }},
		{"a syn of the shape (a new flow)", func() []byte { f := bytes.Clone(good); f[eth+33] = wiretest.SYN; return f }},
	}
	cases = append(cases, ipv4TCPShapeBreaks(good)...)
	cases = append(cases, []shapeCase{
		{"a closed port", func() []byte { return seg(wiretest.ACK, 79) }},
		{"a server-id port (mptcp subflow)", func() []byte { return seg(wiretest.ACK, 1030) }},
		{"the second tcp service range", func() []byte { return seg(wiretest.ACK, 8443) }},
		{"udp to a service port", func() []byte { return udp(53, []byte("query")) }},
		{"udp to a service port, a longer payload", func() []byte { return udp(53, []byte("a longer query")) }},
		{"udp to the quic port", func() []byte { return udp(443, append([]byte{0x40}, make([]byte, 20)...)) }},
		{"udp to a tcp-only port", func() []byte { return udp(80, []byte("x")) }},
		{"udp length below 8", func() []byte { f := udp(53, []byte("query")); f[eth+24], f[eth+25] = 0, 7; return f }},
		{"udp length beyond the ip packet", func() []byte { f := udp(53, []byte("query")); f[eth+25] = 200; return f }},
		{"udp header cut short", func() []byte { f := udp(53, nil)[:eth+20+6]; f[eth+3] = 26; ipv4Resum(f); return f }},
		{"another address", ipc(func(h []byte) { h[19]++ })},
		{"tcp to a bucket that moved (previous owners)", func() []byte { return moved(movedPort, wiretest.ACK) }},
		{"a syn to a bucket that moved", func() []byte { return moved(movedPort, wiretest.SYN) }},
		{"udp to a bucket that moved (the current owner ends the list)", func() []byte { return movedUDP(movedUDPPort) }},
		{"another server-id port", func() []byte { return seg(wiretest.ACK, 1031) }},
	}...)
	for _, c := range cases {
		f := c.frame()
		a, b := runMuxOutcome(t, fast, bench, f), runMuxOutcome(t, general, bench, f)
		if !sameOutcome(a, b) || trafficMoved(a) != trafficMoved(b) {
			t.Errorf("%s: with the straight-line path %s %v (%x), without %s %v (%x)", c.name, a.action, a.counters, a.out, b.action, b.counters, b.out)
		}
		if c.name == "the shape itself" && (a.counters["fwd_bucket"] != 1 || len(a.out) < len(f)+36) {
			t.Errorf("the shape's packet: %s %v; want forwarded by bucket with the 16-byte option", a.action, a.counters)
		}
	}
}

// TestMuxFastShapeRandom compares the mux with and without the
// straight-line path on the common packets (TCP and UDP, buckets moved or
// not, a SYN, the QUIC port) with one or two random bytes changed, the IP
// checksum rewritten in half the cases: the same action, output bytes,
// decision counters and traffic counters, whatever the change.
func TestMuxFastShapeRandom(t *testing.T) {
	fast, general, bench, vip := muxFastPair(t)
	client := netip.MustParseAddr("198.18.200.7")
	var frames [][]byte
	for i := 0; i < 8; i++ {
		sp := uint16(41000 + 7*i)
		for _, flags := range []int{wiretest.ACK, wiretest.SYN} {
			frames = append(frames, wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Segment{
				Flow:  wire.Flow{Src: client, Dst: vip, SrcPort: sp, DstPort: 80, Proto: wire.ProtoTCP},
				Flags: flags, Seq: 1, Ack: 1, Payload: []byte("hello")}.IPv4()))
		}
		for _, dport := range []uint16{53, 443} {
			frames = append(frames, wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Datagram{
				Flow: wire.Flow{Src: client, Dst: vip, SrcPort: sp, DstPort: dport}, Payload: make([]byte, 24)}.IPv4()))
		}
	}
	const eth = 14
	rng := rand.New(rand.NewPCG(27, 2))
	forwarded, fastShape := 0, 0
	for i := 0; i < 3000; i++ {
		f := bytes.Clone(frames[i%len(frames)])
		for n := 1 + rng.IntN(2); n > 0; n-- {
			f[12+rng.IntN(len(f)-12)] = byte(rng.Uint32())
		}
		if rng.IntN(2) == 0 {
			ipv4Resum(f)
		}
		a, b := runMuxOutcome(t, fast, bench, f), runMuxOutcome(t, general, bench, f)
		if !sameOutcome(a, b) || trafficMoved(a) != trafficMoved(b) {
			t.Fatalf("case %d, frame %x: with the straight-line path %s %v (%x), without %s %v (%x)", i, f, a.action, a.counters, a.out, b.action, b.counters, b.out)
		}
		if a.counters["fwd_bucket"] == 1 {
			forwarded++
			if a.counters["fwd_with_previous"] == 0 && len(a.out) >= eth+36 && a.out[eth] == 0x49 {
				fastShape++
			}
		}
	}
	t.Logf("%d of 3000 changed packets forwarded by bucket (%d with the 16-byte option), alike both ways", forwarded, fastShape)
	if fastShape == 0 {
		t.Error("no changed packet took the straight-line path's shape: the comparison saw only other packets")
	}
}
