package dataplane

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire"
)

// withUDPSum6 is a GUE-over-IPv6 frame (gue6Wrap) with its UDP checksum
// set right (0xffff for a sum of 0), then xor-ed with flip (0: right).
func withUDPSum6(frame []byte, flip uint16) []byte {
	f := append([]byte(nil), frame...)
	f[60], f[61] = 0, 0
	c := wire.PseudoChecksum(netip.AddrFrom16([16]byte(f[22:38])), netip.AddrFrom16([16]byte(f[38:54])), wire.ProtoUDP, f[54:])
	if c == 0 {
		c = 0xffff
	}
	binary.BigEndian.PutUint16(f[60:], c^flip)
	return f
}

// TestAgent6PacketChecks (issue 23): GUE over IPv6 with a wrong nonzero UDP
// checksum is dropped and counted by the tc program, and the XDP fast path
// leaves it to it; a right nonzero one is accepted and the chained packet
// leaves with a UDP checksum of 0; a previous owner outside the trusted
// prefixes is not chained to.
func TestAgent6PacketChecks(t *testing.T) {
	b := newAgent6Bench(t)
	b.agent.SetNewestSeen(0, uint64(mux6Incarnation)<<32|7)
	me, prev := mux6Server[1026], mux6Server[1025]
	tcp, wrap, decapped := bench6TCP, bench6Wrap, bench6Decapped
	stray, syn := tcp(40002, 0x10), tcp(40005, 0x02)
	moved := wrap(stray, priv6(7, 0, 0, mux6Changed, prev))
	// What this server sends on (TestAgent6Paths): from itself to prev, hop
	// 1, the UDP checksum 0.
	wantChain := append([]byte{}, moved...)
	copy(wantChain[0:6], []byte{2, 0xbe, 0xa0, 0, 1, 0x10})
	copy(wantChain[6:12], []byte{2, 0xbe, 0xa0, 0, 1, 0x11})
	s, d := me.As16(), prev.As16()
	copy(wantChain[22:38], s[:])
	copy(wantChain[38:54], d[:])
	wantChain[14+52+2] = 1
	untrusted := netip.MustParseAddr("2001:db8:ffff::5")

	cases := []struct {
		name, action, counter string
		frame, want           []byte
		xdpDecaps             bool // the XDP path decapsulates it (else: untouched, tc decides)
	}{
		{"wrong nonzero udp checksum on a packet to chain", "drop", "drop_bad_udp_checksum", withUDPSum6(moved, 0x0100), nil, false},
		{"wrong nonzero udp checksum on a syn to keep", "drop", "drop_bad_udp_checksum", withUDPSum6(wrap(syn, priv6(7, 0, 0, 0)), 0x0001), nil, false},
		{"wrong nonzero udp checksum on a packet for the stack", "drop", "drop_bad_udp_checksum", withUDPSum6(wrap(stray, priv6(7, 0, 0, 0)), 0x8000), nil, false},
		{"right nonzero udp checksum: kept", "pass", "to_stack", withUDPSum6(wrap(stray, priv6(7, 0, 0, 0)), 0), decapped(stray), false},
		{"right nonzero udp checksum: chained with 0", "redirect", "chained", withUDPSum6(moved, 0), wantChain, false},
		{"zero udp checksum: kept in XDP as before", "pass", "to_stack", wrap(stray, priv6(7, 0, 0, 0)), decapped(stray), true},
		{"previous owner outside the trusted prefixes", "drop", "drop_untrusted_owner", wrap(stray, priv6(7, 0, 0, mux6Changed, untrusted)), nil, false},
		{"untrusted previous owner after this server", "drop", "drop_untrusted_owner", wrap(stray, priv6(7, 0, 0, mux6Changed, me, untrusted)), nil, false},
	}
	for _, path := range []string{"tc", "xdp"} {
		for _, c := range cases {
			before, err := b.agent.Counters()
			must(t, err)
			action, out := "", []byte(nil)
			if path == "xdp" {
				xdpAction, xdpOut := runXDP(t, b.ns, b.ifindex, b.agent.XDPProgram(), c.frame)
				if decapped := !bytes.Equal(xdpOut, c.frame); xdpAction != "pass" || decapped != c.xdpDecaps {
					t.Errorf("xdp %s: action %s, decapsulated %v; want pass, decapsulated %v", c.name, xdpAction, decapped, c.xdpDecaps)
					continue
				}
				action, out = "pass", xdpOut
			}
			if !c.xdpDecaps || path == "tc" {
				action, out = runTC(t, b.ns, b.ifindex, b.agent.Program(), c.frame)
			}
			after, err := b.agent.Counters()
			must(t, err)
			if action != c.action || after[c.counter]-before[c.counter] != 1 {
				t.Errorf("%s %s: %s with %s moved by %d; want %s, by 1", path, c.name, action, c.counter,
					after[c.counter]-before[c.counter], c.action)
			}
			if c.want != nil && !bytes.Equal(out[:min(len(out), len(c.want))], c.want) {
				t.Errorf("%s %s: output\n got %x\nwant %x", path, c.name, out, c.want)
			}
		}
	}
}
