package dataplane

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// TestAgentXDPFastShapeChecks takes the XDP fast path's most common packet
// (IP-in-IP, the option naming no previous owner, inner TCP; read whole by
// bpf/include/agent_xdp_fast.h) and breaks one thing of it at a time: each
// broken packet must leave XDP untouched (the tc program decides it), and
// the packet itself must be decapsulated. One case per check that the
// whole-word reading makes, so that a check it lost shows here even when no
// vector of that shape breaks it.
func TestAgentXDPFastShapeChecks(t *testing.T) {
	netlabtest.RequireRoot(t)
	ip := netip.MustParseAddr
	self, mux, vip, client := ip("198.18.0.11"), ip("198.18.0.1"), ip("198.18.100.1"), ip("198.18.200.7")
	a, err := LoadAgent(AgentOptions{Addr: self, Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []AgentVIP{{VIP: vip, Buckets: 100, ChainWindow: time.Minute}}, GenerationMemory: -1})
	must(t, err)
	t.Cleanup(func() { a.Close() })
	a.SyncClock(time.Now())
	a.SetNewestSeen(0, 7<<32|5)

	const eth, outerLen = 14, 36
	build := func(flags int, src, dst netip.Addr, opt *wire.Option) []byte {
		inner := wiretest.Segment{Flow: wire.Flow{Src: client, Dst: dst, SrcPort: 41000, DstPort: 80, Proto: wire.ProtoTCP},
			Flags: flags, Seq: 1, Ack: 1}.IPv4()
		outer, err := wire.Encapsulate(inner, src, self, opt)
		must(t, err)
		return wiretest.Frame(wiretest.MuxMAC, net.HardwareAddr{2, 0xbe, 0xa0, 0, 0, 0x11}, outer)
	}
	steady := func() *wire.Option { return &wire.Option{Incarnation: 7, Generation: 5} }
	// resum rewrites the outer header's checksum after a change to it.
	resum := func(f []byte) { ipv4ResumN(f, outerLen) }
	outer := func(change func(h []byte)) func([]byte) {
		return func(f []byte) { change(f[eth : eth+outerLen]); resum(f) }
	}
	inner := func(change func(p []byte)) func([]byte) { return func(f []byte) { change(f[eth+outerLen:]) } }

	run := func(in []byte) (uint32, []byte) {
		opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+256), Context: xdpMDCtx{DataEnd: uint32(len(in))}}
		ret, err := a.XDPProgram().Run(opts)
		must(t, err)
		return ret, opts.DataOut
	}

	good := build(wiretest.ACK, mux, vip, steady())
	if len(good) < eth+outerLen+40 || good[eth] != 0x49 {
		t.Fatalf("the fast shape's packet is not IP-in-IP with the 16-byte option: %x", good)
	}
	if ret, out := run(good); ret != 2 || len(out) != len(good)-outerLen || !bytes.Equal(out[eth:], good[eth+outerLen:]) {
		t.Fatalf("the fast shape's packet: XDP action %d, %d bytes out; want it decapsulated", ret, len(out))
	}
	if ret, out := run(build(wiretest.SYN, mux, vip, steady())); ret != 2 || len(out) != len(good)-outerLen {
		t.Errorf("a SYN of the fast shape: XDP action %d, %d bytes out; want it decapsulated", ret, len(out))
	}

	for _, c := range []struct {
		name  string
		frame []byte
		mod   func([]byte)
	}{
		{"outer checksum wrong", good, func(f []byte) { f[eth+10] ^= 0x40 }},
		{"outer checksum wrong in its low bit", good, func(f []byte) { f[eth+11] ^= 1 }},
		{"outer checksum wrong elsewhere in the header", good, func(f []byte) { f[eth+25] ^= 0x80 }},
		{"not IPv4 in Ethernet", good, func(f []byte) { f[12], f[13] = 0x08, 0x06 }},
		{"outer not IP-in-IP", good, outer(func(h []byte) { h[9] = 17 })},
		{"outer fragment offset", good, outer(func(h []byte) { h[7] = 1 })},
		{"inner fragment offset", good, inner(func(p []byte) { p[7] = 1 })},
		{"inner not version 4", good, inner(func(p []byte) { p[0] = 0x55 })},
		{"untrusted sender", build(wiretest.ACK, ip("10.9.9.9"), vip, steady()), nil},
		{"for another address", good, outer(func(h []byte) { copy(h[16:20], []byte{198, 18, 0, 99}) })},
		{"outer a fragment", good, outer(func(h []byte) { h[6] |= 0x20 })},
		{"outer longer than the packet", good, outer(func(h []byte) { binary.BigEndian.PutUint16(h[2:], uint16(len(good)-eth+1)) })},
		{"outer shorter than its headers", good, outer(func(h []byte) { binary.BigEndian.PutUint16(h[2:], outerLen-1) })},
		{"option hop beyond its owners", good, outer(func(h []byte) { h[22] = 1 })},
		{"option of another type", good, outer(func(h []byte) { h[20] = 0x9f })},
		{"option length not its header's", good, outer(func(h []byte) { h[21] = 20 })},
		{"inner longer than the outer", good, inner(func(p []byte) { binary.BigEndian.PutUint16(p[2:], uint16(len(p)+1)) })},
		{"inner shorter than its header", good, inner(func(p []byte) { binary.BigEndian.PutUint16(p[2:], 19) })},
		{"inner IPv4 options", good, inner(func(p []byte) { p[0] = 0x46 })},
		{"inner a fragment", good, inner(func(p []byte) { p[6] |= 0x20 })},
		{"inner not TCP", good, inner(func(p []byte) { p[9] = 17 })},
		{"TCP data offset below 5", good, inner(func(p []byte) { p[32] = 4 << 4 })},
		{"TCP header beyond the inner packet", good, inner(func(p []byte) { p[32] = 15 << 4 })},
		{"not one of our VIPs", build(wiretest.ACK, mux, ip("198.18.100.2"), steady()), nil},
		{"an older generation", build(wiretest.ACK, mux, vip, &wire.Option{Incarnation: 7, Generation: 4}), nil},
		{"a newer generation", build(wiretest.ACK, mux, vip, &wire.Option{Incarnation: 7, Generation: 6}), nil},
	} {
		f := bytes.Clone(c.frame)
		if c.mod != nil {
			c.mod(f)
		}
		if ret, out := run(f); ret != 2 || !bytes.Equal(out, f) {
			t.Errorf("%s: XDP action %d, packet changed %v; want it passed to tc untouched", c.name, ret, !bytes.Equal(out, f))
		}
	}
}

// TestAgentXDPFastShapeRandom compares the XDP program with and without the
// fast shape (bpf/include/agent_xdp_fast.h) on the shape's packets with
// random bytes changed, the outer checksum rewritten after the change in
// half the cases (so that the change reaches the checks behind it): both
// must give the same verdict and the same bytes, whatever the change.
func TestAgentXDPFastShapeRandom(t *testing.T) {
	netlabtest.RequireRoot(t)
	ip := netip.MustParseAddr
	self, mux, vip, client := ip("198.18.0.11"), ip("198.18.0.1"), ip("198.18.100.1"), ip("198.18.200.7")
	opts := AgentOptions{Addr: self, Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []AgentVIP{{VIP: vip, Buckets: 100, ChainWindow: time.Minute}}, GenerationMemory: -1}
	fast, err := LoadAgent(opts)
	must(t, err)
	t.Cleanup(func() { fast.Close() })
	agentXDPFastShapeOff = true
	general, err := LoadAgent(opts)
	agentXDPFastShapeOff = false
	must(t, err)
	t.Cleanup(func() { general.Close() })
	for _, a := range []*Agent{fast, general} {
		a.SyncClock(time.Now())
		a.SetNewestSeen(0, 7<<32|5)
	}
	const eth, outerLen = 14, 36
	var frames [][]byte
	for _, flags := range []int{wiretest.ACK, wiretest.SYN, wiretest.ACK | wiretest.FIN} {
		inner := wiretest.Segment{Flow: wire.Flow{Src: client, Dst: vip, SrcPort: 41000, DstPort: 80, Proto: wire.ProtoTCP},
			Flags: flags, Seq: 1, Ack: 1}.IPv4()
		outer, err := wire.Encapsulate(inner, mux, self, &wire.Option{Incarnation: 7, Generation: 5})
		must(t, err)
		frames = append(frames, wiretest.Frame(wiretest.MuxMAC, net.HardwareAddr{2, 0xbe, 0xa0, 0, 0, 0x11}, outer))
	}
	run := func(a *Agent, in []byte) (uint32, []byte) {
		opts := &ebpf.RunOptions{Data: in, DataOut: make([]byte, len(in)+256), Context: xdpMDCtx{DataEnd: uint32(len(in))}}
		ret, err := a.XDPProgram().Run(opts)
		must(t, err)
		return ret, opts.DataOut
	}
	rng := rand.New(rand.NewPCG(27, 1))
	decapped := 0
	for i := 0; i < 4000; i++ {
		f := bytes.Clone(frames[i%len(frames)])
		for n := 1 + rng.IntN(2); n > 0; n-- {
			f[12+rng.IntN(len(f)-12)] = byte(rng.Uint32())
		}
		if rng.IntN(2) == 0 {
			ipv4ResumN(f, outerLen)
		}
		r1, o1 := run(fast, f)
		r2, o2 := run(general, f)
		if r1 != r2 || !bytes.Equal(o1, o2) {
			t.Fatalf("case %d, frame %x: with the fast shape %d (%d bytes), without %d (%d bytes)", i, f, r1, len(o1), r2, len(o2))
		}
		if len(o1) < len(f) {
			decapped++
		}
	}
	t.Logf("%d of 4000 changed packets decapsulated, alike both ways", decapped)
	if decapped == 0 {
		t.Error("no changed packet was decapsulated: the comparison saw only packets both ways pass")
	}
}
