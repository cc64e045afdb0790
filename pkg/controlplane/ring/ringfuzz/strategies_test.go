package ringfuzz

// The strategies' payload sections (ringspi) are read by the ring's
// decoders too: FuzzObject feeds them as well.
import _ "github.com/beamer-lb/beamer/pkg/strategy/all"
