package migration

import (
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// SigInfo is what the SCT knows of one signature on one server: how many of
// the server's live connections have it (more than one: a §5 collision,
// sharing one MCT entry) and when the SCT first saw it (its age estimates
// the connection's, for Algorithm 2).
type SigInfo struct {
	Count uint32
	First time.Time
}

// SCT is the software connection table: per server, the signatures of its
// live connections, as its agent last reported them (servers know their
// connections exactly; a mux never sees a DSR connection end).
type SCT struct {
	Buckets uint32
	servers map[forwarding.ServerID]map[uint64]SigInfo
}

// NewSCT returns an empty SCT for a table of n buckets.
func NewSCT(n uint32) *SCT {
	return &SCT{Buckets: n, servers: map[forwarding.ServerID]map[uint64]SigInfo{}}
}

// Report replaces what the SCT knows of server id with its agent's answer
// (signature → connections), keeping first-seen times, and returns the
// signatures it did not know before.
func (s *SCT) Report(id forwarding.ServerID, sigs map[uint64]uint32, now time.Time) (fresh []uint64) {
	old := s.servers[id]
	cur := make(map[uint64]SigInfo, len(sigs))
	for sig, n := range sigs {
		info, ok := old[sig]
		if !ok {
			info.First = now
			fresh = append(fresh, sig)
		}
		info.Count = n
		cur[sig] = info
	}
	s.servers[id] = cur
	return fresh
}

// Forget drops a server (gone, or its connections dead with it).
func (s *SCT) Forget(id forwarding.ServerID) { delete(s.servers, id) }

// Has tells whether server id reports a live connection with sig.
func (s *SCT) Has(id forwarding.ServerID, sig uint64) bool {
	_, ok := s.servers[id][sig]
	return ok
}

// Known tells whether the SCT has a report of server id.
func (s *SCT) Known(id forwarding.ServerID) bool {
	_, ok := s.servers[id]
	return ok
}

// InBucket lists server id's signatures that fall in bucket b.
func (s *SCT) InBucket(id forwarding.ServerID, b uint32) []uint64 {
	var out []uint64
	for sig := range s.servers[id] {
		if wire.SigBucket(sig, s.Buckets) == b {
			out = append(out, sig)
		}
	}
	return out
}

// Load is Algorithm 2's W(bin) for every bucket owned by id: the sum over
// the bucket's signatures of the time each is expected to stay in the MCT,
// max(T − age, 0), plus a small term per connection so that, among bins
// whose connections are all older than T, the emptier one is still cheaper.
func (s *SCT) Load(id forwarding.ServerID, lifetime time.Duration, now time.Time) map[uint32]float64 {
	w := map[uint32]float64{}
	for sig, info := range s.servers[id] {
		b := wire.SigBucket(sig, s.Buckets)
		w[b] += ExpectedStay(lifetime.Seconds(), now.Sub(info.First).Seconds()) + 1e-3*float64(info.Count)
	}
	return w
}

// Size is the number of signatures the SCT holds over all servers.
func (s *SCT) Size() int {
	n := 0
	for _, m := range s.servers {
		n += len(m)
	}
	return n
}
