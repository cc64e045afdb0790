package wire_test

import (
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
)

// The Go signature matches the shared vectors (the BPF program is checked
// against the same file in pkg/dataplane).
func TestPrismSignatureVectors(t *testing.T) {
	vs, err := wiretest.LoadPrismVectors()
	if err != nil || len(vs) == 0 {
		t.Fatalf("vectors: %v (%d)", err, len(vs))
	}
	for _, v := range vs {
		want, err := v.Signature()
		if err != nil {
			t.Fatal(err)
		}
		f := v.Flow()
		if got := f.Signature(); got != want {
			t.Errorf("%v: signature %#016x, vector %#016x", f, got, want)
		}
		if wire.SigBucket(want, 1009) != v.Bucket || f.Bucket(1009) != v.Bucket {
			t.Errorf("%v: bucket %d / %d, vector %d", f, wire.SigBucket(want, 1009), f.Bucket(1009), v.Bucket)
		}
	}
}
