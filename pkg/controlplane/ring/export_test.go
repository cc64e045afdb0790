package ring

import "github.com/beamer-lb/beamer/pkg/forwarding"

// The payload codec and test helpers, exported to the external tests
// (package ring_test): they import the strategies' packages
// (pkg/strategy/all), whose payload sections the codec writes and reads,
// and which may import this package.

// MarshalBlob is t's raw blob payload.
func MarshalBlob(t *forwarding.Table) ([]byte, error) { return marshalBlob(t) }

// MarshalDelta is d's raw delta payload.
func MarshalDelta(d *forwarding.Delta) ([]byte, error) { return marshalDelta(d) }

// UnmarshalBlob reads a raw blob payload of generation gen.
func UnmarshalBlob(gen uint32, raw []byte) (*forwarding.Table, error) { return unmarshalBlob(gen, raw) }

// UnmarshalDelta reads a raw delta payload of generation gen.
func UnmarshalDelta(gen uint32, raw []byte) (*forwarding.Delta, error) {
	return unmarshalDelta(gen, raw)
}

var (
	RandomTable = randomTable // a valid table of n buckets (codec_test.go)
	SameTable   = sameTable   // what Verify compares
	BlobBytes   = blobBytes   // MarshalBlob where it cannot fail
	DeltaBytes  = deltaBytes  // MarshalDelta where it cannot fail
)
