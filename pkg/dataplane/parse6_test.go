package dataplane

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// parse6Model is the documented IPv6 parse of docs/wire-format.md
// ("Extension headers, bounded"; bpf/include/parse.h, flow.h) written
// again from the table, for the frame after its Ethernet header: the drop
// counter it ends in, or "" when the packet parses.
func parse6Model(ip []byte) string {
	if ip[0]>>4 != 6 {
		return "drop_bad_header"
	}
	plen := int(binary.BigEndian.Uint16(ip[4:]))
	end := plen + 40
	if end > len(ip) {
		return "drop_truncated"
	}
	nh, off := ip[6], 40
	isExt := func(n byte) bool { return n == 0 || n == 43 || n == 44 || n == 60 }
	for i := 0; i < 5 && isExt(nh); i++ {
		if nh == 0 && i > 0 {
			return "drop_bad_header"
		}
		if off+4 > len(ip) {
			return "drop_truncated"
		}
		h := ip[off:]
		n := (int(h[1]) + 1) * 8
		if nh == 44 {
			n = 8
			if binary.BigEndian.Uint16(h[2:])&0xfff9 != 0 {
				return "drop_fragment"
			}
		} else if nh == 43 && h[3] != 0 {
			return "drop_ext_headers"
		}
		off += n
		if off > 40+256 {
			return "drop_ext_headers"
		}
		if off > end {
			return "drop_truncated"
		}
		nh = h[0]
	}
	switch {
	case isExt(nh):
		return "drop_ext_headers"
	case nh == 6:
		if off+20 > len(ip) {
			return "drop_truncated"
		}
		doff := int(ip[off+12] >> 4)
		if doff < 5 {
			return "drop_bad_header"
		}
		if off+doff*4 > end {
			return "drop_truncated"
		}
	case nh == 17:
		if off+8 > len(ip) {
			return "drop_truncated"
		}
		l := int(binary.BigEndian.Uint16(ip[off+4:]))
		if l < 8 {
			return "drop_bad_header"
		}
		if off+l > end {
			return "drop_truncated"
		}
	default:
		return "drop_not_tcp"
	}
	return ""
}

// TestMux6ParseRandom is an attacker's view of the bounded parse: 2,000
// seeded random IPv6 packets to the VIP — chains of up to seven extension
// headers of random types and lengths, fragment headers with random offset
// and M, routing headers with segments left, hop-by-hop anywhere, odd
// transport protocols and data offsets, frames cut short and payload
// lengths that lie — each run through the mux, which must end in exactly
// the drop counter the documented rules give (parse6Model), or get past
// the parse when they say it parses.
func TestMux6ParseRandom(t *testing.T) {
	m, b := newMux6Bench(t, mux6AddrV4, mux6Addr)
	rng := rand.New(rand.NewPCG(6, 16))
	parseDrops := []string{"drop_truncated", "drop_bad_header", "drop_fragment", "drop_ext_headers", "drop_not_tcp"}
	f0 := flow6To(6, 80, 0)
	seen := map[string]int{}
	for i := 0; i < 2000; i++ {
		var ext []ext6
		for n := rng.IntN(8); n > 0; n-- {
			switch rng.IntN(5) {
			case 0:
				ext = append(ext, optsHdr(0, rng.IntN(3)))
			case 1:
				ext = append(ext, optsHdr(60, []int{0, 1, 4, 31, 33}[rng.IntN(5)]))
			case 2:
				off, more := uint16(0), false
				if rng.IntN(3) == 0 {
					off, more = uint16(rng.IntN(4)), rng.IntN(2) == 0
				}
				ext = append(ext, fragHdr(off, more))
			default:
				ext = append(ext, routingHdr(uint8(rng.IntN(2)*rng.IntN(3))))
			}
		}
		p := pkt6{src: f0.Src, dst: f0.Dst, ext: ext, proto: []uint8{6, 6, 6, 17, 50, 59}[rng.IntN(6)],
			sport: f0.SrcPort, dport: 80, flags: 0x10, payload: make([]byte, rng.IntN(40))}
		if p.proto == 17 {
			p.dport = 53
		}
		if p.proto == 50 || p.proto == 59 {
			p.l4 = make([]byte, 8)
		}
		frame := p.frame()
		switch rng.IntN(6) {
		case 0: // cut short, payload length unchanged
			frame = frame[:14+40+rng.IntN(len(frame)-54+1)]
		case 1: // payload length lies, longer or shorter
			binary.BigEndian.PutUint16(frame[18:], uint16(rng.IntN(len(frame))))
		case 2: // a TCP data offset below 5 or past the end
			if p.proto == 6 {
				frame[len(frame)-len(p.payload)-20+12] = byte(rng.IntN(16)) << 4
			}
		}
		if len(frame) < 14+40 {
			continue
		}
		want := parse6Model(frame[14:])
		before, err := m.Counters()
		must(t, err)
		runXDP(t, b.ns, b.ifindex, m.Program(), frame)
		after, err := m.Counters()
		must(t, err)
		got := ""
		for _, c := range parseDrops {
			if after[c] != before[c] {
				got = c
			}
		}
		if got != want {
			t.Fatalf("packet %d (%x): the mux ended in %q, the rules say %q", i, frame[14:], got, want)
		}
		if want == "" && after["pass_not_vip6"] != before["pass_not_vip6"] {
			t.Fatalf("packet %d: a VIP's packet passed as not a VIP", i)
		}
		seen[want]++
	}
	// The generator must reach every outcome, or the test proves little.
	for _, c := range append(parseDrops, "") {
		if seen[c] < 10 {
			t.Errorf("only %d random packets ended in %q: %v", seen[c], c, fmt.Sprint(seen))
		}
	}
	t.Logf("outcomes: %v", seen)
}
