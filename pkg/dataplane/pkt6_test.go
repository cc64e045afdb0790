package dataplane

import (
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab"
)

// ext6 is one IPv6 extension header of a test packet: its type and its
// bytes after the next-header byte (the length byte included; a fragment
// header's 7 bytes).
type ext6 struct {
	typ  uint8
	body []byte
}

// optsHdr is a hop-by-hop or destination options header of 8*(n+1) bytes
// (PadN filling it).
func optsHdr(typ uint8, n int) ext6 {
	b := make([]byte, 8*(n+1)-1)
	b[0] = byte(n)
	b[1], b[2] = 1, byte(len(b)-3) // PadN over the rest
	return ext6{typ, b}
}

// fragHdr is a fragment header with the given offset (8-byte units) and M.
func fragHdr(offset uint16, more bool) ext6 {
	b := make([]byte, 7)
	v := offset << 3
	if more {
		v |= 1
	}
	binary.BigEndian.PutUint16(b[1:], v)
	binary.BigEndian.PutUint32(b[3:], 0xbea0)
	return ext6{44, b}
}

// routingHdr is a type-4 (segment routing) header with segLeft segments left.
func routingHdr(segLeft uint8) ext6 {
	b := make([]byte, 23)
	b[0], b[1], b[2] = 2, 4, segLeft // 24 bytes, type 4
	return ext6{43, b}
}

// pkt6 is a test packet: Ethernet, IPv6, extension headers, then TCP or UDP
// (or raw bytes of another protocol).
type pkt6 struct {
	src, dst     netip.Addr
	ext          []ext6
	proto        uint8 // 6 TCP, 17 UDP, else l4 is raw
	sport, dport uint16
	flags        uint8 // TCP flags byte
	l4           []byte
	payload      []byte
}

func (p pkt6) frame() []byte {
	var l4 []byte
	switch p.proto {
	case 6:
		l4 = make([]byte, 20)
		binary.BigEndian.PutUint16(l4[0:], p.sport)
		binary.BigEndian.PutUint16(l4[2:], p.dport)
		binary.BigEndian.PutUint32(l4[4:], 1000)
		l4[12] = 5 << 4
		l4[13] = p.flags
		binary.BigEndian.PutUint16(l4[14:], 65535)
	case 17:
		l4 = make([]byte, 8)
		binary.BigEndian.PutUint16(l4[0:], p.sport)
		binary.BigEndian.PutUint16(l4[2:], p.dport)
		binary.BigEndian.PutUint16(l4[4:], uint16(8+len(p.payload)))
	default:
		l4 = p.l4
	}
	l4 = append(l4, p.payload...)
	var ext []byte
	next := p.proto
	for i := len(p.ext) - 1; i >= 0; i-- {
		h := append([]byte{next}, p.ext[i].body...)
		ext = append(h, ext...)
		next = p.ext[i].typ
	}
	f := []byte{2, 0xbe, 0xa0, 0, 0, 2, 2, 0xbe, 0xa0, 0, 0, 0x99, 0x86, 0xdd}
	ip := make([]byte, 40)
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], uint16(len(ext)+len(l4)))
	ip[6], ip[7] = next, 64
	s, d := p.src.As16(), p.dst.As16()
	copy(ip[8:], s[:])
	copy(ip[24:], d[:])
	f = append(f, ip...)
	f = append(f, ext...)
	return append(f, l4...)
}

// addAddr6 adds an IPv6 address usable at once (no duplicate address
// detection, which would leave it tentative and a bind to it refused).
func addAddr6(t testing.TB, ns *netlab.Namespace, dev string, p netip.Prefix) {
	t.Helper()
	// netlab's AddAddr skips duplicate address detection and waits for the
	// local route: without that wait a connect right after the add can
	// fail with "network is unreachable" on a busy machine.
	must(t, ns.AddAddr(dev, p))
}

// ptb6 is an ICMPv6 Packet Too Big from router to `to` quoting the first
// 48 bytes of the reply from:vport -> client:cport (TCP).
func ptb6(router, to, from, client netip.Addr, vport, cport uint16) []byte {
	icmp := []byte{2, 0, 0, 0, 0, 0, 0x05, 0x00}
	q := make([]byte, 48)
	q[0] = 0x60
	binary.BigEndian.PutUint16(q[4:], 1400)
	q[6], q[7] = 6, 64
	s, d := from.As16(), client.As16()
	copy(q[8:], s[:])
	copy(q[24:], d[:])
	binary.BigEndian.PutUint16(q[40:], vport)
	binary.BigEndian.PutUint16(q[42:], cport)
	return pkt6{src: router, dst: to, proto: 58, l4: append(icmp, q...)}.frame()
}
