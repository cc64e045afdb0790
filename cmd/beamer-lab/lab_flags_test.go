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
