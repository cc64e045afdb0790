package assign

import (
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// MaxTableSize bounds lookup tables, matching the largest bucket count an
// instance may have.
const MaxTableSize = 1 << 24

// ErrTable wraps errors of the lookup-table builders.
var ErrTable = fmt.Errorf("assign: lookup table")

// positive checks servers and size and returns the servers with a positive
// weight sorted by id, so a table depends on the set of servers, not on the
// order they were listed in.
func positive(servers []Server, size uint32) ([]Server, error) {
	if err := CheckServers(servers); err != nil {
		return nil, err
	}
	if size == 0 || size > MaxTableSize {
		return nil, fmt.Errorf("%w: size %d outside 1–%d", ErrTable, size, MaxTableSize)
	}
	var live []Server
	for _, s := range servers {
		if s.Weight > 0 {
			live = append(live, s)
		}
	}
	slices.SortFunc(live, func(x, y Server) int { return int(x.ID) - int(y.ID) })
	return live, nil
}

// Counts returns how many table entries (or buckets) each server owns,
// indexed by server id.
func Counts(table []forwarding.ServerID) []uint32 {
	n := make([]uint32, idSpace)
	for _, o := range table {
		n[o]++
	}
	return n
}
