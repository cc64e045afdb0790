package store

import (
	"strings"
	"testing"
)

// FuzzValidKey: what ValidKey accepts is an absolute path of non-empty
// elements, and a child joined to it is valid too (run for a few seconds by
// `make test`, scripts/fuzz.sh; seeds in testdata/fuzz/FuzzValidKey).
func FuzzValidKey(f *testing.F) {
	f.Fuzz(func(t *testing.T, key, child string) {
		if ValidKey(key) != nil {
			return
		}
		if !strings.HasPrefix(key, "/") || strings.Contains(key, "//") || strings.HasSuffix(key, "/") {
			t.Fatalf("ValidKey accepted %q", key)
		}
		if child == "" || strings.Contains(child, "/") {
			return
		}
		if err := ValidKey(Join(key, child)); err != nil {
			t.Fatalf("Join(%q, %q): %v", key, child, err)
		}
	})
}
