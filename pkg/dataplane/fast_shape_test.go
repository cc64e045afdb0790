package dataplane

import (
	"bytes"
	"encoding/binary"
)

// shapeCase is one packet of a straight-line path's shape test
// (TestMuxFastShapeChecks, TestMaglevFastShapeChecks).
type shapeCase struct {
	name  string
	frame func() []byte
}

// ipv4TCPShapeBreaks are good (an Ethernet frame of an IPv4 TCP segment
// without IP options) broken one check at a time, the IPv4 checksum made
// right again where the header changed: the checks of the IPv4 header and
// the TCP header's length that every straight-line path makes
// (bpf/include/mux_fast.h, bpf/strategy/maglev_fast.h) before its own.
func ipv4TCPShapeBreaks(good []byte) []shapeCase {
	const eth = 14
	ipc := func(change func(h []byte)) func() []byte {
		return func() []byte { f := bytes.Clone(good); change(f[eth:]); ipv4Resum(f); return f }
	}
	edit := func(change func(f []byte)) func() []byte {
		return func() []byte { f := bytes.Clone(good); change(f); return f }
	}
	return []shapeCase{
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
		{"tcp header cut short", func() []byte { f := bytes.Clone(good[:eth+20+12]); f[eth+3] = 32; ipv4Resum(f); return f }},
		{"ethernet padding after the packet", func() []byte { return append(bytes.Clone(good), 0, 0, 0, 0, 0, 0) }},
	}
}

// ipv4Resum rewrites the IPv4 header checksum of an Ethernet frame.
func ipv4Resum(f []byte) { ipv4ResumN(f, 20) }

// ipv4ResumN rewrites the checksum of the frame's first IPv4 header, taken
// as n bytes long (an outer header with options).
func ipv4ResumN(f []byte, n int) {
	const eth = 14
	h := f[eth : eth+n]
	h[10], h[11] = 0, 0
	var sum uint32
	for i := 0; i < n; i += 2 {
		sum += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for sum > 0xffff {
		sum = sum&0xffff + sum>>16
	}
	binary.BigEndian.PutUint16(h[10:], ^uint16(sum))
}
