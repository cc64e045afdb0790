package assign

import (
	"math"
	"runtime"
	"sync"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// RendezvousTable builds a lookup table by rendezvous (highest random
// weight) hashing: entry i goes to the server with the highest score for
// (i, server). With weights, the score is w / −ln(u) for the pair's hash u
// in (0,1) (logarithmic weighted rendezvous), which gives each server a
// share proportional to its weight; when all weights are equal that order
// is the order of the hashes, which are compared directly. Removing a
// server changes only its own entries. Cost: size × servers hashes.
func RendezvousTable(servers []Server, size uint32) ([]forwarding.ServerID, error) {
	live, err := positive(servers, size)
	if err != nil {
		return nil, err
	}
	table := make([]forwarding.ServerID, size)
	if len(live) == 0 {
		return table, nil
	}
	keys := make([]uint64, len(live))
	equal := true
	for i, s := range live {
		keys[i] = hashID(seedRendezvous, uint16(s.ID))
		equal = equal && s.Weight == live[0].Weight
	}
	// Entries are independent: split them over the CPUs. The table is the
	// same whatever the split.
	workers := min(runtime.GOMAXPROCS(0), 1+len(table)/4096)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := len(table)*w/workers, len(table)*(w+1)/workers
		wg.Go(func() { rendezvousRange(table, lo, hi, live, keys, equal) })
	}
	wg.Wait()
	return table, nil
}

func rendezvousRange(table []forwarding.ServerID, lo, hi int, live []Server, keys []uint64, equal bool) {
	for e := lo; e < hi; e++ {
		ek := mix64(uint64(e) + seedRendezvous)
		if equal {
			best, bestH := 0, uint64(0)
			for j, k := range keys {
				if h := mix64(ek ^ k); h > bestH {
					best, bestH = j, h
				}
			}
			table[e] = live[best].ID
			continue
		}
		best, bestS := 0, -1.0
		for j, k := range keys {
			u := (float64(mix64(ek^k)>>11) + 0.5) / (1 << 53)
			if s := float64(live[j].Weight) / -math.Log(u); s > bestS {
				best, bestS = j, s
			}
		}
		table[e] = live[best].ID
	}
}
