package assign

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Typical Maglev table sizes (Maglev §5.3): primes well above 100 entries
// per backend for 650 and 6500 backends.
const (
	MaglevSmallTable = 65537
	MaglevLargeTable = 655373
)

// MaglevTable builds a Maglev lookup table (Maglev §3.4) of the given prime
// size. Each backend's preference list is the permutation
// (offset + j·skip) mod size, with offset and skip hashed from its id; the
// backends take turns claiming their next still-empty preferred entry until
// the table is full. Weights set how often a backend gets a turn: each round
// adds its weight to a credit and it takes one turn per maximum weight of
// credit, so the heaviest backend takes one turn per round and the others
// proportionally fewer. Backends with weight 0 get no entry; with none of
// positive weight the table is all NoServer.
//
// The result depends only on the set of (id, weight) pairs and size.
func MaglevTable(backends []Server, size uint32) ([]forwarding.ServerID, error) {
	live, err := positive(backends, size)
	if err != nil {
		return nil, err
	}
	if err := CheckMaglevSize(size); err != nil {
		return nil, err
	}
	if len(live) > int(size) {
		return nil, fmt.Errorf("%w: %d backends do not fit a table of %d", ErrTable, len(live), size)
	}
	table := make([]forwarding.ServerID, size)
	if len(live) == 0 {
		return table, nil
	}
	n := len(live)
	pos := make([]uint32, n)
	skip := make([]uint32, n)
	weight := make([]uint64, n)
	credit := make([]uint64, n)
	var heaviest uint64
	for i, b := range live {
		pos[i] = uint32(hashID(seedMaglevOffset, uint16(b.ID)) % uint64(size))
		skip[i] = uint32(hashID(seedMaglevSkip, uint16(b.ID))%uint64(size-1)) + 1
		weight[i] = uint64(b.Weight)
		heaviest = max(heaviest, weight[i])
	}
	for filled := uint32(0); ; {
		for i := range n {
			credit[i] += weight[i]
			for credit[i] >= heaviest {
				credit[i] -= heaviest
				// Walk the preference list to the first free entry. Positions
				// advance by addition with one conditional subtraction:
				// no division in the loop.
				p, s := pos[i], skip[i]
				for table[p] != forwarding.NoServer {
					if p += s; p >= size {
						p -= size
					}
				}
				table[p] = live[i].ID
				if p += s; p >= size {
					p -= size
				}
				pos[i] = p
				if filled++; filled == size {
					return table, nil
				}
			}
		}
	}
}

// CheckMaglevSize says why size cannot be a Maglev table size, if it
// cannot: it must be a prime (the permutations need it) within MaxTableSize.
func CheckMaglevSize(size uint32) error {
	if size == 0 || size > MaxTableSize {
		return fmt.Errorf("%w: size %d outside 1–%d", ErrTable, size, MaxTableSize)
	}
	if err := forwarding.CheckMaglevTableSize(size); err != nil {
		return fmt.Errorf("%w: %v", ErrTable, err) // the one prime rule, shared with instance validation
	}
	return nil
}
