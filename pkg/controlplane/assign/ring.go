package assign

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// MaxRingPoints bounds the points a ring may hold (8 bytes of hash and 2 of
// id each), so a huge weight cannot exhaust memory.
const MaxRingPoints = 1 << 26

// RingTable maps a Karger consistent-hashing ring onto a lookup table of
// size entries. Every server puts vnodes·weight points on a 64-bit ring at
// hashes of (id, replica); table entry i stands for the slice of hash space
// starting at ⌊i·2⁶⁴/size⌋ and goes to the server of the first point at or
// after that position, wrapping around. Removing a server therefore changes
// only its own entries. The result depends only on the set of (id, weight)
// pairs, vnodes and size.
func RingTable(servers []Server, vnodes int, size uint32) ([]forwarding.ServerID, error) {
	live, err := positive(servers, size)
	if err != nil {
		return nil, err
	}
	if vnodes < 1 {
		return nil, fmt.Errorf("%w: %d virtual nodes per server; need at least 1", ErrTable, vnodes)
	}
	var total uint64
	for _, s := range live {
		total += uint64(vnodes) * uint64(s.Weight)
	}
	if total > MaxRingPoints {
		return nil, fmt.Errorf("%w: ring would hold %d points (virtual nodes × weights), more than %d", ErrTable, total, MaxRingPoints)
	}
	table := make([]forwarding.ServerID, size)
	if total == 0 {
		return table, nil
	}
	type point struct {
		at uint64
		id forwarding.ServerID
	}
	points := make([]point, 0, total)
	for _, s := range live {
		key := hashID(seedRing, uint16(s.ID))
		for r := range uint64(vnodes) * uint64(s.Weight) {
			points = append(points, point{mix64(key + r), s.ID})
		}
	}
	slices.SortFunc(points, func(x, y point) int {
		if x.at != y.at {
			if x.at < y.at {
				return -1
			}
			return 1
		}
		return int(x.id) - int(y.id)
	})
	k := 0
	for i := range table {
		at, _ := bits.Div64(uint64(i), 0, uint64(size))
		for k < len(points) && points[k].at < at {
			k++
		}
		table[i] = points[k%len(points)].id
	}
	return table, nil
}
