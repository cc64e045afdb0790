package dataplane

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// maglevFastPair loads the vectors' Maglev mux twice, with and without the
// straight-line path for a connection-table hit (bpf/strategy/maglev_fast.h),
// each with its own connection table (tables large enough that no bucket
// fills: both remember the same connections whatever their seeds).
func maglevFastPair(t *testing.T) (fast, general *maglevRig) {
	fast = newMaglevRig(t, MuxOptions{ConnTrackEntries: 1 << 16})
	v, err := wiretest.LoadVectors()
	must(t, err)
	maglevFastOff = true
	m, err := LoadMux(MuxOptions{Addr: v.Maglev.MuxAddr, ConnTrackEntries: 1 << 16})
	maglevFastOff = false
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Maglev.Table()
	must(t, err)
	must(t, m.SetInstance(v.Maglev.Instance, table))
	// One network for both: the same next hops and MACs.
	return fast, &maglevRig{t: t, m: m, bench: fast.bench, table: table, vip: fast.vip}
}

// both runs frame through both muxes and fails unless they agree on the
// action, the output bytes and every counter; it returns the fast one's.
func (fast *maglevRig) both(t *testing.T, general *maglevRig, name string, frame []byte) muxOutcome {
	t.Helper()
	a := runMuxOutcome(t, fast.m, fast.bench, frame)
	b := runMuxOutcome(t, general.m, general.bench, frame)
	if !sameOutcome(a, b) || trafficMoved(a) != trafficMoved(b) {
		t.Errorf("%s, frame %x: with the straight-line path %s %v (%x), without %s %v (%x)", name, frame, a.action, a.counters, a.out, b.action, b.counters, b.out)
	}
	return a
}

func ipv4Resum(f []byte) {
	const eth = 14
	h := f[eth : eth+20]
	h[10], h[11] = 0, 0
	var sum uint32
	for i := 0; i < 20; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
}

// TestMaglevFastShapeChecks takes a Maglev connection-table hit (a TCP ACK
// and a UDP datagram of known connections) and breaks one thing of it at a
// time: with and without the straight-line path, each packet must get the
// same action, output bytes and counters; the hit itself must be counted
// ct_hit and sent without option. One case per check the straight-line
// path makes, and the server's states (draining: still a hit; down: stale).
func TestMaglevFastShapeChecks(t *testing.T) {
	fast, general := maglevFastPair(t)
	const eth = 14
	client := netip.MustParseAddr("198.18.200.9")
	seg := func(flags int, sport, dport uint16) []byte {
		return wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Segment{
			Flow:  wire.Flow{Src: client, Dst: fast.vip, SrcPort: sport, DstPort: dport, Proto: wire.ProtoTCP},
			Flags: flags, Seq: 1, Ack: 1, Payload: []byte("hello")}.IPv4())
	}
	udp := func(sport, dport uint16, payload []byte) []byte {
		return wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Datagram{
			Flow: wire.Flow{Src: client, Dst: fast.vip, SrcPort: sport, DstPort: dport}, Payload: payload}.IPv4())
	}
	// Known connections: a TCP one by its SYN, a UDP one by its first
	// datagram (a miss, remembered).
	fast.both(t, general, "syn", seg(wiretest.SYN, 41000, 80))
	fast.both(t, general, "first datagram", udp(41000, 53, []byte("query")))
	good := seg(wiretest.ACK, 41000, 80)
	for _, c := range []struct {
		name  string
		frame []byte
	}{{"tcp hit", good}, {"udp hit", udp(41000, 53, []byte("query"))}} {
		o := fast.both(t, general, c.name, c.frame)
		if o.counters["ct_hit"] != 1 || len(o.out) != len(c.frame)+20 || o.out[eth] != 0x45 {
			t.Fatalf("%s: %s %v, %d bytes out; want a ct_hit sent in 20 bytes of IP-in-IP", c.name, o.action, o.counters, len(o.out))
		}
	}
	ipc := func(change func(h []byte)) []byte {
		f := bytes.Clone(good)
		change(f[eth:])
		ipv4Resum(f)
		return f
	}
	edit := func(change func(f []byte)) []byte { f := bytes.Clone(good); change(f); return f }
	cases := []struct {
		name  string
		frame []byte
	}{
		{"the hit itself", bytes.Clone(good)},
		{"a syn of the connection (chosen again)", edit(func(f []byte) { f[eth+33] = wiretest.SYN })},
		{"a syn-ack", edit(func(f []byte) { f[eth+33] = wiretest.SYN | wiretest.ACK })},
		{"not ipv4 in ethernet", edit(func(f []byte) { f[12] = 0x86 })},
		{"ip version 6", ipc(func(h []byte) { h[0] = 0x65 })},
		{"ihl below 5", ipc(func(h []byte) { h[0] = 0x44 })},
		{"ihl 6 (options)", ipc(func(h []byte) { h[0] = 0x46 })},
		{"total length below the header", ipc(func(h []byte) { binary.BigEndian.PutUint16(h[2:], 19) })},
		{"total length beyond the packet", ipc(func(h []byte) { binary.BigEndian.PutUint16(h[2:], 1400) })},
		{"total length cuts the tcp header", ipc(func(h []byte) { binary.BigEndian.PutUint16(h[2:], 30) })},
		{"more fragments", ipc(func(h []byte) { h[6] |= 0x20 })},
		{"a fragment offset", ipc(func(h []byte) { h[7] = 1 })},
		{"don't fragment clear", ipc(func(h []byte) { h[6] &^= 0x40 })},
		{"tos set", ipc(func(h []byte) { h[1] = 0xb8 })},
		{"protocol icmp", ipc(func(h []byte) { h[9] = 1 })},
		{"protocol gre", ipc(func(h []byte) { h[9] = 47 })},
		{"tcp data offset below 5", edit(func(f []byte) { f[eth+32] = 0x40 })},
		{"tcp data offset beyond the total length", edit(func(f []byte) { f[eth+32] = 0xf0 })},
		{"tcp header cut short", func() []byte { f := bytes.Clone(good[:eth+20+12]); f[eth+3] = 32; ipv4Resum(f); return f }()},
		{"ethernet padding after the packet", append(bytes.Clone(good), 0, 0, 0, 0, 0, 0)},
		{"a closed port", seg(wiretest.ACK, 41000, 79)},
		{"a server-id port (mptcp subflow)", seg(wiretest.ACK, 41000, 1030)},
		{"another tcp service port, unknown (a miss)", seg(wiretest.ACK, 41000, 443)},
		{"the same, known now", seg(wiretest.ACK, 41000, 443)},
		{"udp to a tcp-only port", udp(41000, 80, []byte("x"))},
		{"udp length below 8", func() []byte { f := udp(41000, 53, []byte("query")); f[eth+24], f[eth+25] = 0, 7; return f }()},
		{"udp length beyond the ip packet", func() []byte { f := udp(41000, 53, []byte("query")); f[eth+25] = 200; return f }()},
		{"udp header cut short", func() []byte { f := udp(41000, 53, nil)[:eth+20+6]; f[eth+3] = 26; ipv4Resum(f); return f }()},
		{"another address (a miss)", ipc(func(h []byte) { h[15]++ })},
		{"another vip address (not a vip)", ipc(func(h []byte) { h[19]++ })},
	}
	for _, c := range cases {
		fast.both(t, general, c.name, c.frame)
	}

	// The connection's server drains (retired: still a hit), then fails its
	// health checks (down: stale, chosen again), in both muxes alike.
	id := fast.table.Buckets[fast.flow(41000).Bucket(uint32(len(fast.table.Buckets)))].Current
	repl := forwarding.ServerID(1025)
	if repl == id {
		repl = 1027
	}
	state := func(s forwarding.ServerState) {
		for _, r := range []*maglevRig{fast, general} {
			d := &forwarding.Delta{Servers: []forwarding.ServerChange{{ID: id, Server: forwarding.Server{Addr: r.table.Servers[id].Addr, State: s}}}}
			for i, b := range r.table.Buckets {
				if b.Current == id { // a retired server owns no bucket
					d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Current: repl}})
				}
			}
			r.apply(d)
		}
	}
	state(forwarding.Retired)
	if o := fast.both(t, general, "a draining server's connection", bytes.Clone(good)); o.counters["ct_hit"] != 1 {
		t.Errorf("a draining server's connection: %v, want ct_hit", o.counters)
	}
	state(forwarding.Down)
	if o := fast.both(t, general, "a down server's connection", bytes.Clone(good)); o.counters["ct_stale"] != 1 {
		t.Errorf("a down server's connection: %v, want ct_stale", o.counters)
	}
}

// TestMaglevFastRandom compares the Maglev mux with and without the
// straight-line path on hits (TCP ACKs and UDP datagrams of known
// connections) with one or two random bytes changed, the IP checksum
// rewritten in half the cases: the same action, output bytes, decision
// counters and traffic counters, whatever the change.
func TestMaglevFastRandom(t *testing.T) {
	fast, general := maglevFastPair(t)
	client := netip.MustParseAddr("198.18.200.9")
	var frames [][]byte
	for i := 0; i < 8; i++ {
		sp := uint16(42000 + 7*i)
		tcp := func(flags int) []byte {
			return wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Segment{
				Flow:  wire.Flow{Src: client, Dst: fast.vip, SrcPort: sp, DstPort: 80, Proto: wire.ProtoTCP},
				Flags: flags, Seq: 1, Ack: 1, Payload: []byte("hello")}.IPv4())
		}
		dgram := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, wiretest.Datagram{
			Flow: wire.Flow{Src: client, Dst: fast.vip, SrcPort: sp, DstPort: 53}, Payload: make([]byte, 24)}.IPv4())
		fast.both(t, general, "syn", tcp(wiretest.SYN))
		fast.both(t, general, "first datagram", dgram)
		frames = append(frames, tcp(wiretest.ACK), dgram)
	}
	const eth = 14
	rng := rand.New(rand.NewPCG(27, 3))
	hits := 0
	for i := 0; i < 3000 && !t.Failed(); i++ {
		f := bytes.Clone(frames[i%len(frames)])
		for n := 1 + rng.IntN(2); n > 0; n-- {
			f[12+rng.IntN(len(f)-12)] = byte(rng.Uint32())
		}
		if rng.IntN(2) == 0 {
			ipv4Resum(f)
		}
		if o := fast.both(t, general, "changed", f); o.counters["ct_hit"] == 1 && len(o.out) == len(f)+20 {
			hits++
		}
	}
	t.Logf("%d of 3000 changed packets were connection-table hits, alike both ways", hits)
	if hits == 0 {
		t.Error("no changed packet was a hit: the comparison saw only other packets")
	}
}
