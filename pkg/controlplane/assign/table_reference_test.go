package assign

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Straightforward implementations written from the papers' descriptions,
// without the optimisations of the real builders, to check them against.

// maglevReference is Maglev's populate loop with explicit permutation
// tables and modulo arithmetic, plus weighted turns.
func maglevReference(backends []Server, m uint32) []forwarding.ServerID {
	live, _ := positive(backends, m)
	perm := make([][]uint32, len(live))
	var heaviest uint64
	for i, b := range live {
		offset := hashID(seedMaglevOffset, uint16(b.ID)) % uint64(m)
		skip := hashID(seedMaglevSkip, uint16(b.ID))%uint64(m-1) + 1
		perm[i] = make([]uint32, m)
		for j := range uint64(m) {
			perm[i][j] = uint32((offset + j*skip) % uint64(m))
		}
		heaviest = max(heaviest, uint64(b.Weight))
	}
	entry := make([]forwarding.ServerID, m)
	if len(live) == 0 {
		return entry
	}
	next := make([]int, len(live))
	credit := make([]uint64, len(live))
	for n := uint32(0); n < m; {
		for i := 0; i < len(live) && n < m; i++ {
			credit[i] += uint64(live[i].Weight)
			for credit[i] >= heaviest && n < m {
				credit[i] -= heaviest
				c := perm[i][next[i]]
				for entry[c] != 0 {
					next[i]++
					c = perm[i][next[i]]
				}
				entry[c] = live[i].ID
				next[i]++
				n++
			}
		}
	}
	return entry
}

// ringReference finds, for every entry, the point at the smallest
// clockwise distance from the entry's position by scanning all points.
func ringReference(servers []Server, vnodes int, m uint32) []forwarding.ServerID {
	live, _ := positive(servers, m)
	table := make([]forwarding.ServerID, m)
	for e := range table {
		at, _ := bits.Div64(uint64(e), 0, uint64(m))
		bestD := uint64(math.MaxUint64)
		for _, s := range live {
			key := hashID(seedRing, uint16(s.ID))
			for r := range uint64(vnodes) * uint64(s.Weight) {
				d := mix64(key+r) - at // clockwise distance, wrapping
				if d < bestD || d == bestD && s.ID < table[e] {
					bestD, table[e] = d, s.ID
				}
			}
		}
	}
	return table
}

// rendezvousReference always uses the weighted score.
func rendezvousReference(servers []Server, m uint32) []forwarding.ServerID {
	live, _ := positive(servers, m)
	table := make([]forwarding.ServerID, m)
	for e := range table {
		bestS := -1.0
		for _, s := range live {
			h := mix64(mix64(uint64(e)+seedRendezvous) ^ hashID(seedRendezvous, uint16(s.ID)))
			u := (float64(h>>11) + 0.5) / (1 << 53)
			if sc := float64(s.Weight) / -math.Log(u); sc > bestS {
				bestS, table[e] = sc, s.ID
			}
		}
	}
	return table
}

func TestTablesMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for range 30 {
		m := []uint32{2, 3, 13, 101, 1009}[r.IntN(5)]
		var servers []Server
		for _, id := range r.Perm(int(min(m, 40)))[:1+r.IntN(int(min(m, 40)))] {
			servers = append(servers, Server{forwarding.ServerID(1025 + id), uint32(r.IntN(4))})
		}
		if got, want := mustTable(MaglevTable(servers, m)), maglevReference(servers, m); !slices.Equal(got, want) {
			t.Fatalf("maglev %v size %d:\n got %v\nwant %v", servers, m, got, want)
		}
		if got, want := mustTable(RingTable(servers, 3, m)), ringReference(servers, 3, m); !slices.Equal(got, want) {
			t.Fatalf("ring %v size %d:\n got %v\nwant %v", servers, m, got, want)
		}
		// Equal weights take the fast path; the reference always scores.
		if got, want := mustTable(RendezvousTable(servers, m)), rendezvousReference(servers, m); !slices.Equal(got, want) {
			t.Fatalf("rendezvous %v size %d:\n got %v\nwant %v", servers, m, got, want)
		}
	}
}

func mustTable(t []forwarding.ServerID, err error) []forwarding.ServerID {
	if err != nil {
		panic(err)
	}
	return t
}
