package wire

import (
	"bytes"
	"net/netip"
	"reflect"
	"testing"
)

// Fuzz targets of the wire parser (run for a few seconds by `make test`,
// scripts/fuzz.sh; seeds in testdata/fuzz). Whatever the bytes, parsing
// never panics, what parses re-encodes to what was parsed, and a
// decapsulated packet's inner part lies within the packet.

func FuzzParseOption(f *testing.F) {
	f.Add(Option{Generation: 7, Changed: 1_700_000_000}.Marshal())
	f.Add(Option{Hop: 1, Generation: 7, Incarnation: 1_700_000_000, Changed: 1_700_000_100,
		Prev: []netip.Addr{netip.MustParseAddr("198.18.0.11"), netip.MustParseAddr("198.18.0.12")}}.Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ParseOption(b)
		if err != nil {
			return
		}
		again, err := ParseOption(o.Marshal())
		if err != nil || !reflect.DeepEqual(again, o) {
			t.Fatalf("option %+v does not survive Marshal/Parse: %+v, %v", o, again, err)
		}
	})
}

func FuzzDecapsulate(f *testing.F) {
	f.Fuzz(func(t *testing.T, pkt []byte) {
		out, err := Decapsulate(pkt)
		if err != nil {
			return
		}
		if len(out.Inner) > len(pkt) || !bytes.Contains(pkt, out.Inner) {
			t.Fatalf("inner packet of %d bytes not within the %d-byte packet", len(out.Inner), len(pkt))
		}
	})
}

func FuzzDecapsulateGUE(f *testing.F) {
	inner := make([]byte, 40)
	inner[0], inner[3], inner[9] = 0x45, 40, ProtoTCP
	opt := &Option{Hop: 1, Generation: 7, Changed: 1, Prev: []netip.Addr{netip.MustParseAddr("198.18.0.11"), netip.MustParseAddr("198.18.0.12")}}
	if b, err := EncapsulateGUE(inner, netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("198.18.0.10"), 0xc001, GUEDefaultPort, opt); err == nil {
		f.Add(b)
	}
	inner6 := make([]byte, 60)
	inner6[0], inner6[5], inner6[6] = 0x60, 20, ProtoTCP
	opt6 := &Option{Generation: 7, Prev: []netip.Addr{netip.MustParseAddr("2001:db8::11")}}
	if b, err := EncapsulateGUE(inner6, netip.MustParseAddr("2001:db8::1"), netip.MustParseAddr("2001:db8::10"), 0xc001, GUEDefaultPort, opt6); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		out, err := DecapsulateGUE(pkt, GUEDefaultPort)
		if err != nil {
			return
		}
		if len(out.Inner) > len(pkt) || !bytes.Contains(pkt, out.Inner) {
			t.Fatalf("inner packet of %d bytes not within the %d-byte packet", len(out.Inner), len(pkt))
		}
		if o := out.Option; o != nil {
			size := 4
			if !out.Src.Is4() {
				size = 16
			}
			b, err := o.marshalAddrs(size)
			if err != nil || !bytes.Contains(pkt, b) {
				t.Fatalf("option %+v does not re-encode to the packet's bytes: %v", o, err)
			}
		}
	})
}
