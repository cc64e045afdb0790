package classes

import "math"

// Class bounds: m = 0 would be ECMP (one class regardless of capacity) and
// is not AWFD; 16 classes are what the paper's Fig. 10 explores, and past
// them the record only grows.
const (
	MinClasses     = 1
	MaxClasses     = 16
	DefaultClasses = 4
)

// Weights quantises available capacities into weights 0..m (paper §III-B1:
// w_i = ⌊m·A_i / max_j A_j⌋). A capacity that is not a positive finite
// number counts as none: a server that reports garbage or is full gets no
// new connections. When no server has capacity every weight is 0, and the
// caller publishes a record with no class: muxes then fall back to equal
// shares (see Record.Empty).
func Weights(avail []float64, m int) []int {
	w := make([]int, len(avail))
	best := 0.0
	for _, a := range avail {
		if usable(a) && a > best {
			best = a
		}
	}
	if best == 0 {
		return w
	}
	for i, a := range avail {
		if !usable(a) {
			continue
		}
		k := int(math.Floor(float64(m) * a / best))
		w[i] = min(max(k, 0), m)
	}
	return w
}

func usable(a float64) bool { return a > 0 && !math.IsInf(a, 0) && !math.IsNaN(a) }
