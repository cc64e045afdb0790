package dataplane

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestGUE6EncapProbe runs xdp_encap_gue6 (bpf/include/gue.h, GUE over an
// IPv6 outer header) on IPv6 packets and checks every byte against the Go
// model of the layout (wire.EncapsulateGUE): no private data, one and six
// previous owners (the longest, 164 bytes of outer headers), a traffic
// class to copy, a short UDP packet.
func TestGUE6EncapProbe(t *testing.T) {
	netlabtest.RequireRoot(t)
	var objs gue6ProbeObjects
	must(t, loadGue6ProbeObjects(&objs, nil))
	defer objs.Close()
	mux, server := netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::10")
	owners := []netip.Addr{netip.MustParseAddr("2001:db8::11"), netip.MustParseAddr("2001:db8::12"), netip.MustParseAddr("2001:db8:1::13"),
		netip.MustParseAddr("2001:db8::14"), netip.MustParseAddr("2001:db8::15"), netip.MustParseAddr("2001:db8:ffff::16")}
	inner6 := func(proto byte, tc byte, payload int) []byte {
		l4 := 20
		if proto == wire.ProtoUDP {
			l4 = 8
		}
		b := make([]byte, 40+l4+payload)
		b[0], b[1] = 0x60|tc>>4, tc<<4|0x0a // flow label bits the outer header does not copy
		binary.BigEndian.PutUint16(b[4:], uint16(l4+payload))
		b[6], b[7] = proto, 61
		copy(b[8:], netip.MustParseAddr("2001:db8:c::5").AsSlice())
		copy(b[24:], netip.MustParseAddr("2001:db8:100::1").AsSlice())
		binary.BigEndian.PutUint16(b[40:], 40000)
		binary.BigEndian.PutUint16(b[42:], 443)
		if proto == wire.ProtoUDP {
			binary.BigEndian.PutUint16(b[44:], uint16(l4+payload))
		} else {
			b[52], b[53] = 0x50, 0x10
		}
		return b
	}
	cases := []struct {
		name  string
		inner []byte
		opt   *wire.Option
	}{
		{"no private data", inner6(wire.ProtoTCP, 0, 10), nil},
		{"bucket that never moved", inner6(wire.ProtoTCP, 0xb8, 0), &wire.Option{Generation: 7, Incarnation: 1763600000}},
		{"one previous owner", inner6(wire.ProtoTCP, 0, 100), &wire.Option{Generation: 8, Incarnation: 1763600000, Changed: 1763700000, Prev: owners[:1]}},
		{"six previous owners", inner6(wire.ProtoTCP, 0x20, 0), &wire.Option{Hop: 0, Generation: 9, Incarnation: 1, Changed: 2, Prev: owners}},
		{"udp, return flag", inner6(wire.ProtoUDP, 0, 0), &wire.Option{Flags: wire.FlagReturn, Generation: 9, Incarnation: 1, Changed: 2, Prev: owners[:2]}},
	}
	for _, c := range cases {
		var p struct {
			Saddr, Daddr [16]byte
			Opt          [16 + 16*6]byte
		}
		p.Saddr, p.Daddr = mux.As16(), server.As16()
		outerLen := wire.GUEPlain6
		if c.opt != nil {
			// The option's bytes as the mux's decision writes them: the
			// fixed part, then the owners (what is not sent stays junk).
			for i := range p.Opt {
				p.Opt[i] = 0xee
			}
			o := *c.opt
			want, err := wire.EncapsulateGUE(c.inner, mux, server, 1, 1, &o)
			must(t, err)
			priv := want[wire.GUEPlain6 : wire.GUEPlain6+16+16*len(o.Prev)]
			copy(p.Opt[:], priv)
			outerLen += len(priv)
		}
		must(t, objs.ProbeParams.Set(p))
		must(t, objs.ProbeOuterLen.Set(uint32(outerLen)))
		must(t, objs.ProbeSport.Set(uint16(0xc123)))
		must(t, objs.ProbeDport.Set(uint16(6080)))
		frame := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, c.inner)
		frame[12], frame[13] = 0x86, 0xdd
		ret, out, err := objs.Gue6EncapProbe.Test(frame)
		must(t, err)
		if ret != 3 /* XDP_TX */ {
			t.Errorf("%s: probe returned %d", c.name, ret)
			continue
		}
		want, err := wire.EncapsulateGUE(c.inner, mux, server, 0xc123, 6080, c.opt)
		must(t, err)
		if !bytes.Equal(out[:12], make([]byte, 12)) || out[12] != 0x86 || out[13] != 0xdd || !bytes.Equal(out[14:], want) {
			t.Errorf("%s:\n got %x\nwant %x", c.name, out[14:], want)
		}
		if o, err := wire.DecapsulateGUE(out[14:], 6080); err != nil || !bytes.Equal(o.Inner, c.inner) {
			t.Errorf("%s: the model does not read it back: %v", c.name, err)
		}
	}
}
