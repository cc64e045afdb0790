package cheetahsim

import (
	"slices"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Two Beamers run side by side over the same arrivals and DIP updates:
//
//   - productBeamer is this product: the controller's own code,
//     assign.RebalanceLimited (a bucket whose history holds K previous
//     owners does not move while its owner stays) and forwarding.HistoryRules
//     (up to K previous owners per bucket; an owner that still holds
//     connections is kept past the window — a hold — as the agents report);
//   - publishedBeamer is Beamer as the NSDI'18 paper describes it and as the
//     Cheetah paper models it: the same greedy rebalance (§4.5, longest-held
//     buckets first) with no limit, one previous owner per bucket (a move
//     overwrites it) and a fixed daisy-chaining window after the move (the
//     paper's kernel module: 4 minutes), nothing held.
//
// The Cheetah paper's remark — "if an entry in the indirection table
// changes its server mapping twice, Beamer will break those existing
// connections that were relying on the initial state" — is true of the
// second and not of the first (up to K moves, and past the window while
// held), which is why the two are reported apart.

// productBeamer is this product's Beamer table.
type productBeamer struct {
	buckets []forwarding.Bucket
	k       int
	window  uint32
	held    map[heldKey]int // live connections per (server, bucket)
}

type heldKey struct {
	server forwarding.ServerID
	bucket uint32
}

// publishedBeamer is the published Beamer's table: History[0] is the one
// previous owner, Changed the time of the bucket's last move.
type publishedBeamer struct {
	buckets []forwarding.Bucket
	window  uint32
}

// newBeamerTables returns both tables of nb buckets, balanced over servers
// the same way.
func newBeamerTables(nb int, servers []assign.Server, k int, window uint32) (*productBeamer, *publishedBeamer) {
	b := make([]forwarding.Bucket, nb)
	for _, ch := range assign.Rebalance(b, servers, 1) {
		b[ch.Index] = ch.Bucket
	}
	return &productBeamer{buckets: b, k: k, window: window, held: map[heldKey]int{}},
		&publishedBeamer{buckets: slices.Clone(b), window: window}
}

// update is one generation of the product's controller at time now: the
// limited rebalance over servers, then the history rules (moves and aging,
// holds answered from the live connections).
func (p *productBeamer) update(servers []assign.Server, now uint32) {
	rules := &forwarding.HistoryRules{K: p.k, Window: p.window, Now: now,
		Held: func(s forwarding.ServerID, b uint32) bool { return p.held[heldKey{s, b}] > 0 }}
	for _, ch := range rules.Plan(p.buckets, assign.RebalanceLimited(p.buckets, servers, now, p.k)) {
		p.buckets[ch.Index] = ch.Bucket
	}
}

func (p *productBeamer) owner(bucket uint32) forwarding.ServerID { return p.buckets[bucket].Current }

// open and close count a connection of server s in bucket, as its agent
// would report it to the controller.
func (p *productBeamer) open(s forwarding.ServerID, bucket uint32) { p.held[heldKey{s, bucket}]++ }

func (p *productBeamer) close(s forwarding.ServerID, bucket uint32) {
	k := heldKey{s, bucket}
	if p.held[k]--; p.held[k] <= 0 {
		delete(p.held, k)
	}
}

// reaches tells whether a packet of a connection held by s in bucket gets
// to s: the owner, or a previous owner still in the history (the history
// rules drop expired entries at each generation, so no clock is needed).
func (p *productBeamer) reaches(bucket uint32, s forwarding.ServerID) bool {
	b := p.buckets[bucket]
	return b.Current == s || slices.Contains(b.History[:b.History.Len()], s)
}

// update is one rebalance of the published controller at time now: every
// moved bucket names its old owner as the previous DIP (forgetting the one
// before) and now as the time of the change.
func (p *publishedBeamer) update(servers []assign.Server, now uint32) {
	for _, ch := range assign.Rebalance(p.buckets, servers, now) {
		p.buckets[ch.Index] = ch.Bucket // {Current: new, History: {old}, Changed: now}
	}
}

func (p *publishedBeamer) owner(bucket uint32) forwarding.ServerID { return p.buckets[bucket].Current }

// reaches tells whether, at time t (seconds), a packet of a connection held
// by s in bucket gets to s: the owner, or the previous owner while the
// daisy-chaining window after the change is open.
func (p *publishedBeamer) reaches(bucket uint32, s forwarding.ServerID, t float64) bool {
	b := p.buckets[bucket]
	if b.Current == s {
		return true
	}
	return b.History[0] == s && t < float64(b.Changed)+float64(p.window)
}
