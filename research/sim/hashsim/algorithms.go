package hashsim

import (
	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// algorithm puts the four algorithms on the same footing: each maps a
// server set to a table of buckets / lookup entries. Stable hashing is the
// only one with memory: it rebalances the previous table (nil: a fresh one).
type algorithm struct {
	name  string
	build func(prev []forwarding.ServerID, servers []assign.Server, size uint32) ([]forwarding.ServerID, error)
}

func stable() algorithm {
	return algorithm{"stable", func(prev []forwarding.ServerID, servers []assign.Server, size uint32) ([]forwarding.ServerID, error) {
		buckets := make([]forwarding.Bucket, size)
		for i, o := range prev {
			buckets[i].Current = o
		}
		for _, c := range assign.Rebalance(buckets, servers, 1) {
			buckets[c.Index] = c.Bucket
		}
		return assign.Owners(buckets), nil
	}}
}

func maglev() algorithm {
	return algorithm{"maglev", func(_ []forwarding.ServerID, s []assign.Server, size uint32) ([]forwarding.ServerID, error) {
		return assign.MaglevTable(s, size)
	}}
}

func consistent(vnodes int) algorithm {
	return algorithm{"consistent", func(_ []forwarding.ServerID, s []assign.Server, size uint32) ([]forwarding.ServerID, error) {
		return assign.RingTable(s, vnodes, size)
	}}
}

func rendezvous() algorithm {
	return algorithm{"rendezvous", func(_ []forwarding.ServerID, s []assign.Server, size uint32) ([]forwarding.ServerID, error) {
		return assign.RendezvousTable(s, size)
	}}
}

// equalServers returns n servers of weight 1 with consecutive ids.
func equalServers(n int) []assign.Server {
	s := make([]assign.Server, n)
	for i := range s {
		s[i] = assign.Server{ID: forwarding.MinServerID + forwarding.ServerID(i), Weight: 1}
	}
	return s
}

// imbalance is max load / average load over the servers listed.
func imbalance(table []forwarding.ServerID, servers []assign.Server) float64 {
	counts := assign.Counts(table)
	var most uint32
	for _, s := range servers {
		most = max(most, counts[s.ID])
	}
	return float64(most) * float64(len(servers)) / float64(len(table))
}
