package ring

// ParsePointer reads a latest-gen or latest-blob value, for a reader that
// probes the pointer without following the ring (the mux's health check).
func ParsePointer(v []byte) (Pair, error) { return parsePointer(v) }
