package declarative

import (
	"strings"
	"testing"
)

// FuzzParse: any input gets a document or an error, never a panic; a
// document that parses writes back (Marshal) to one that parses to the
// same state (no difference by Diff).
func FuzzParse(f *testing.F) {
	f.Add(base)
	f.Add("apiVersion: beamer/v1\ninstances: []\n")
	f.Add("apiVersion: beamer/v1\ninstances:\n  - name: x\n    servers: [{id: 1, address: ::1}]\n")
	f.Fuzz(func(t *testing.T, text string) {
		d, err := Parse("fuzz.yaml", strings.NewReader(text))
		if err != nil {
			return
		}
		b, err := d.Marshal()
		if err != nil {
			t.Fatalf("marshal of a parsed document: %v", err)
		}
		again, err := Parse("again.yaml", strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("the written document does not parse: %v\n%s", err, b)
		}
		if ch := Diff(d, again); len(ch) != 0 {
			t.Fatalf("written and read back differs: %v\n%s", ch, b)
		}
	})
}
