package classes

import "github.com/beamer-lb/beamer/pkg/forwarding"

// Golden is the odd multiplier that decorrelates the second stage from the
// first: the first stage uses the hash's high bits (multiply-shift), so the
// hashes that land in one class form one contiguous range, and multiplying
// by 2^32/φ spreads any such range evenly over 0..2^32-1 again (a Weyl
// sequence) before the server is picked by multiply-shift. The paper uses
// flID mod wSum and flID mod |B| with the same hash, which biases the pick
// whenever wSum and |B| share a factor.
const Golden = 0x9E3779B1

// ClassOf is stage I of Algorithm 1: the index (0-based, weight index+1)
// of the class whose hash range holds hash, or -1 when the record has no
// class. The ranges are the cumulative sums Upper[k] = Σ_{j≤k} (j+1)·|B_j|
// over 0..Total-1; a class is chosen with probability (k+1)·|B_k| / Total.
func (r *Record) ClassOf(hash uint32) int {
	total := r.Total()
	if total == 0 {
		return -1
	}
	pos := uint32(uint64(hash) * uint64(total) >> 32)
	for k, up := range r.Upper {
		if pos < up {
			return k
		}
	}
	return -1 // unreachable for a valid record: pos < Total = last Upper
}

// Select is Algorithm 1 for a new connection's flow hash: the class by hash
// range, then the server within the class by the remixed hash. NoServer
// when the record has no class (the mux falls back to its table).
func (r *Record) Select(hash uint32) forwarding.ServerID {
	k := r.ClassOf(hash)
	if k < 0 {
		return forwarding.NoServer
	}
	members := r.Classes[k]
	i := uint32(uint64(hash*Golden) * uint64(len(members)) >> 32)
	return members[i]
}
