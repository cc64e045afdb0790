package cheetahsim

import (
	"container/heap"
	"math/rand/v2"
	"slices"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// PCCConfig sizes the PCC experiment.
type PCCConfig struct {
	Seed       uint64    `json:"seed"`
	Servers    int       `json:"servers"`
	Active     int       `json:"active_connections"`
	MeanLife   float64   `json:"mean_lifetime_s"`
	Duration   float64   `json:"duration_s"`
	PerMinute  []float64 `json:"dip_updates_per_minute"`
	ChainLen   int       `json:"beamer_max_chain"`
	WindowSecs uint32    `json:"beamer_window_s"`
}

// PCCRow is one point of the paper's PCC figure: of the connections that
// started during the run, the share mapped to two servers.
type PCCRow struct {
	Design      string  `json:"design"`
	PerMinute   float64 `json:"dip_updates_per_minute"`
	Connections int     `json:"connections"`
	Broken      int     `json:"broken"`
	BrokenPct   float64 `json:"broken_pct"`
	Note        string  `json:"note,omitempty"`
}

func nextPrime(n uint32) uint32 {
	for ; ; n++ {
		prime := n > 1
		for d := uint32(2); d*d <= n; d++ {
			if n%d == 0 {
				prime = false
				break
			}
		}
		if prime {
			return n
		}
	}
}

// PCC runs the three designs over the same arrivals and DIP updates. An
// update alternately takes a random active server out (weight 0: it gets no
// new connections and keeps serving its own until they end — a planned
// removal, the case the stateless designs claim to handle) and puts a random
// removed one back.
func PCC(c PCCConfig) []PCCRow {
	var rows []PCCRow
	for _, f := range c.PerMinute {
		rows = append(rows, pccRun(c, f)...)
	}
	return rows
}

func pccRun(c PCCConfig, perMinute float64) []PCCRow {
	r := rand.New(rand.NewPCG(c.Seed, uint64(perMinute*1000)))
	n := c.Servers
	id := func(i int) forwarding.ServerID { return forwarding.MinServerID + forwarding.ServerID(i) }
	active := make([]bool, n)
	for i := range active {
		active[i] = true
	}
	list := func() []assign.Server {
		var s []assign.Server
		for i, a := range active {
			if a {
				s = append(s, assign.Server{ID: id(i), Weight: 1})
			}
		}
		return s
	}

	// Beamer: the controller's rebalance and history rules, holds answered
	// from the live connections as the agents would.
	buckets := make([]forwarding.Bucket, 100*n)
	for _, ch := range assign.Rebalance(buckets, list(), 1) {
		buckets[ch.Index] = ch.Bucket
	}
	held := map[[2]uint32]int{}
	// Maglev: the table over the active servers.
	msize := nextPrime(uint32(100 * n))
	mtable, _ := assign.MaglevTable(list(), msize)
	// Cheetah: round robin over the active servers; slots never reused.
	rr := 0

	type live struct {
		conn
		mentry  uint32
		mserver forwarding.ServerID
		cserver int
		mbroken bool
		counted bool // started after the warm-up
	}
	var h ends
	all := map[*conn]*live{}
	var total, beamerBroken, maglevBroken, cheetahBroken int
	rate := float64(c.Active) / c.MeanLife
	warm := 3 * c.MeanLife
	interval := 60 / perMinute
	nextUpdate := warm
	t := 0.0
	remove := true
	for t < warm+c.Duration {
		t += r.ExpFloat64() / rate
		for nextUpdate <= t {
			now := uint32(nextUpdate) + 1
			h.expire(nextUpdate, func(x *conn) {
				l := all[x]
				held[[2]uint32{uint32(l.server), l.bucket}]--
				delete(all, x)
			})
			// One DIP update.
			var out, in []int
			for i, a := range active {
				if a {
					out = append(out, i)
				} else {
					in = append(in, i)
				}
			}
			if (remove && len(out) > n/2) || len(in) == 0 {
				active[out[r.IntN(len(out))]] = false
			} else {
				active[in[r.IntN(len(in))]] = true
			}
			remove = !remove
			servers := list()
			rules := &forwarding.HistoryRules{K: c.ChainLen, Window: c.WindowSecs, Now: now,
				Held: func(s forwarding.ServerID, b uint32) bool {
					return held[[2]uint32{uint32(s - forwarding.MinServerID), b}] > 0
				}}
			for _, ch := range rules.Plan(buckets, assign.RebalanceLimited(buckets, servers, now, c.ChainLen)) {
				buckets[ch.Index] = ch.Bucket
			}
			mtable, _ = assign.MaglevTable(servers, msize)
			for _, l := range all {
				b := buckets[l.bucket]
				s := id(l.server)
				if !l.broken && b.Current != s && !slices.Contains(b.History[:b.History.Len()], s) {
					l.broken = true
					if l.counted {
						beamerBroken++
					}
				}
				if !l.mbroken && mtable[l.mentry] != l.mserver {
					l.mbroken = true
					if l.counted {
						maglevBroken++
					}
				}
			}
			nextUpdate += interval
		}
		h.expire(t, func(x *conn) {
			l := all[x]
			held[[2]uint32{uint32(l.server), l.bucket}]--
			delete(all, x)
		})
		hash := r.Uint32()
		l := &live{conn: conn{end: t + lifetime(r, c.MeanLife), bucket: wire.BucketOf(hash, uint32(len(buckets)))}}
		l.server = int(buckets[l.bucket].Current - forwarding.MinServerID)
		l.mentry = wire.BucketOf(hash, msize)
		l.mserver = mtable[l.mentry]
		for k := 0; k < n; k++ { // next active server in round-robin order
			rr = (rr + 1) % n
			if active[rr] {
				break
			}
		}
		l.cserver = rr
		held[[2]uint32{uint32(l.server), l.bucket}]++
		all[&l.conn] = l
		heap.Push(&h, &l.conn)
		if t >= warm {
			total++
			l.counted = true
		}
	}
	// Cheetah: the cookie names the slot the connection started on; the
	// slot keeps its server while any connection names it (removed servers
	// are retired, not reused), so no connection is ever sent elsewhere.
	pct := func(b int) float64 { return 100 * float64(b) / float64(max(total, 1)) }
	return []PCCRow{
		{Design: "beamer", PerMinute: perMinute, Connections: total, Broken: beamerBroken, BrokenPct: pct(beamerBroken)},
		{Design: "maglev", PerMinute: perMinute, Connections: total, Broken: maglevBroken, BrokenPct: pct(maglevBroken),
			Note: "connections whose Maglev entry changed owner: broken when they reach a mux without their connection-table entry (mux change or restart)"},
		{Design: "cheetah", PerMinute: perMinute, Connections: total, Broken: cheetahBroken, BrokenPct: pct(cheetahBroken)},
	}
}
