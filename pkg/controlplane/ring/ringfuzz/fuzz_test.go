package ringfuzz

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
)

// FuzzObject feeds arbitrary bytes as a whole object of a 600-bucket
// instance on a store of 1 MiB values: every check a reader runs must
// reject or accept without panicking and without letting a claimed size
// past its bounds (CheckObject panics if one does). Seeds: a blob, a delta
// and a header alone, in testdata/fuzz/FuzzObject.
func FuzzObject(f *testing.F) {
	f.Fuzz(func(t *testing.T, obj []byte) {
		ring.CheckObject(obj, 600, 1<<20)
	})
}

// FuzzPointer: a pointer parses only in its one canonical spelling, and an
// error quotes a bounded prefix of the value.
func FuzzPointer(f *testing.F) {
	for _, s := range []string{"0@1", "42@1763850000", "4294967295@4294967295", "42", "x", "042@1", "-1@2", "1@", "@1", "1@2@3", " 1@2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		p, err := ring.ParsePointer(v)
		if err != nil {
			if len(err.Error()) > 300 { // 32 bytes quoted take at most 130 characters
				t.Fatalf("error of %d bytes quotes too much", len(err.Error()))
			}
			return
		}
		if !bytes.Equal(ring.FormatPointer(p), v) {
			t.Fatalf("%q parsed as %v, which formats as %q", v, p, ring.FormatPointer(p))
		}
	})
}

// FuzzGenName: a generation node name parses only as ten digits.
func FuzzGenName(f *testing.F) {
	for _, s := range []string{"0000000042", "4294967295", "4294967296", "42", "000000004x", "+000000042"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		g, ok := ring.ParseGenName(name)
		if ok && fmt.Sprintf("%010d", g) != name {
			t.Fatalf("%q parsed as generation %d", name, g)
		}
	})
}
