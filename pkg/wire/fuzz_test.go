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
