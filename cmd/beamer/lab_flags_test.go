package main

import (
	"slices"
	"testing"
)

func TestParseCounts(t *testing.T) {
	for in, want := range map[string][]int{"": nil, "2": {2}, "1-4": {1, 2, 3, 4}, "1,3": {1, 3}} {
		got, err := parseCounts(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: got %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "4-1", "x", "1,,2", "-3"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int{"5000": 5000, "256KiB": 256 << 10, "1MiB": 1 << 20, "2MB": 2 << 20, "1G": 0} {
		got, err := parseBytes(in)
		if want == 0 {
			if err == nil {
				t.Errorf("%q accepted as %d", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: got %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestBGPFlags(t *testing.T) {
	if o, err := (&bgpFlags{}).options(nil); o != nil || err != nil {
		t.Errorf("no peer: want no BGP, got %v, %v", o, err)
	}
	for name, f := range map[string]bgpFlags{
		"peer without ASN": {peers: []string{"198.18.0.254:65000"}, hold: 9e9},
		"ASN without peer": {asn: 65001},
		"hold below 3s":    {asn: 65001, peers: []string{"198.18.0.254:65000"}, hold: 2e9},
		"fractional hold":  {asn: 65001, peers: []string{"198.18.0.254:65000"}, hold: 3500e6},
		"bad router id":    {asn: 65001, peers: []string{"198.18.0.254:65000"}, hold: 9e9, routerID: "x"},
		"bad peer":         {asn: 65001, peers: []string{"198.18.0.254"}, hold: 9e9},
	} {
		if _, err := f.options(nil); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	o, err := (&bgpFlags{asn: 65001, peers: []string{"198.18.0.254:65000"}, hold: 3e9}).options(nil)
	if err != nil || o.ASN != 65001 || len(o.Peers) != 1 || o.HoldTime != 3e9 {
		t.Errorf("got %+v, %v", o, err)
	}
}
