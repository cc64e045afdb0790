package ring

import "fmt"

// Entry points for fuzzing (pkg/controlplane/ring/ringfuzz) and inspection tools: the
// exact checks readers run, on bytes rather than on a store.

// CheckObject runs every check a reader runs on a whole encoded object
// (its chunks concatenated) of an instance of the given bucket count on a
// store whose values are at most maxValue bytes: header, sizes against
// those bounds, checksums, bounded decompression and decoding (a blob also
// validated). It returns what the header says.
func CheckObject(obj []byte, buckets uint32, maxValue int) (kind Kind, incarnation, generation uint32, err error) {
	h, err := parseHeader(obj)
	if err != nil {
		return 0, 0, 0, err
	}
	lim := instanceLimits(buckets, maxValue)
	if err := lim.check(h); err != nil {
		return h.kind, h.incarnation, h.generation, err
	}
	if h.rawLen > lim.raw || uint64(h.payloadLen)+HeaderSize > uint64(h.chunks)*uint64(maxValue) {
		panic(fmt.Sprintf("ring: header past the bounds accepted: %+v", h))
	}
	raw, err := decodePayload(h, obj[HeaderSize:])
	if err != nil {
		return h.kind, h.incarnation, h.generation, err
	}
	if h.kind == KindBlob {
		t, err := unmarshalBlob(h.generation, raw)
		if err == nil {
			err = t.Validate()
		}
		return h.kind, h.incarnation, h.generation, err
	}
	_, err = unmarshalDelta(h.generation, raw)
	return h.kind, h.incarnation, h.generation, err
}

// ParsePointer parses a latest-gen or latest-blob value
// (GENERATION@INCARNATION); FormatPointer is its inverse.
func ParsePointer(v []byte) (Pair, error) { return parsePointer(v) }

// FormatPointer renders a pointer value.
func FormatPointer(p Pair) []byte { return formatPointer(p) }

// ParseGenName parses the name of a generation node (ten digits).
func ParseGenName(name string) (uint32, bool) { return parseGen(name) }
