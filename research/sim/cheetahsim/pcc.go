package cheetahsim

import (
	"container/heap"
	"math/rand/v2"

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
	// BrokenByWindow (published Beamer only) are the broken connections
	// whose bucket still named their server as the previous owner: the
	// fixed window closed on them. The others lost it to a second move.
	BrokenByWindow int    `json:"broken_by_window,omitempty"`
	Note           string `json:"note,omitempty"`
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

// The designs of the PCC rows.
const (
	DesignBeamer          = "beamer"           // this product's Beamer
	DesignBeamerPublished = "beamer-published" // Beamer as published (NSDI'18)
	DesignMaglev          = "maglev"
	DesignCheetah         = "cheetah"
)

// PCC runs the four designs over the same arrivals and DIP updates. An
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

	// Beamer twice: this product's and the published one (beamer_models.go).
	beamer, published := newBeamerTables(100*n, list(), c.ChainLen, c.WindowSecs)
	// Maglev: the table over the active servers.
	msize := nextPrime(uint32(100 * n))
	mtable, _ := assign.MaglevTable(list(), msize)
	// Cheetah: round robin over the active servers; slots never reused.
	rr := 0

	type live struct {
		conn
		pserver forwarding.ServerID // where the published Beamer sent it
		pbroken bool
		mentry  uint32
		mserver forwarding.ServerID
		cserver int
		mbroken bool
		counted bool // started after the warm-up
	}
	var h ends
	all := map[*conn]*live{}
	var total, beamerBroken, publishedBroken, publishedByWindow, maglevBroken, cheetahBroken int
	// checkPublished marks the connections the published Beamer no longer
	// delivers at time t. Its table changes only at updates and its
	// chaining only closes with time, so checking at the end of every
	// interval between updates (before the next update, and when a
	// connection ends) sees every break.
	checkPublished := func(l *live, t float64) {
		if !l.pbroken && !published.reaches(l.bucket, l.pserver, t) {
			l.pbroken = true
			if l.counted {
				publishedBroken++
				if published.buckets[l.bucket].History[0] == l.pserver {
					publishedByWindow++
				}
			}
		}
	}
	countedLive := 0 // measured connections not ended yet
	done := func(x *conn) {
		l := all[x]
		checkPublished(l, x.end)
		if l.counted {
			countedLive--
		}
		beamer.close(id(l.server), l.bucket)
		delete(all, x)
	}
	rate := float64(c.Active) / c.MeanLife
	warm := 3 * c.MeanLife
	interval := 60 / perMinute
	nextUpdate := warm
	t := 0.0
	remove := true
	// step runs the DIP update due at nextUpdate. While draining (no more
	// arrivals), a design none of whose measured connections can still
	// break needs no new tables; step tells whether any design still does.
	draining := false
	step := func() bool {
		now := uint32(nextUpdate) + 1
		h.expire(nextUpdate, done)
		for _, l := range all {
			checkPublished(l, nextUpdate)
		}
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
		needB, needP, needM := !draining, !draining, !draining
		if draining {
			for _, l := range all {
				if l.counted {
					needB = needB || !l.broken
					needP = needP || !l.pbroken
					needM = needM || !l.mbroken
				}
			}
		}
		servers := list()
		if needB {
			beamer.update(servers, now)
		}
		if needP {
			published.update(servers, now)
		}
		if needM {
			mtable, _ = assign.MaglevTable(servers, msize)
		}
		for _, l := range all {
			checkPublished(l, nextUpdate)
			if !l.broken && !beamer.reaches(l.bucket, id(l.server)) {
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
		return needB || needP || needM
	}
	for t < warm+c.Duration {
		t += r.ExpFloat64() / rate
		for nextUpdate <= t {
			step()
		}
		h.expire(t, done)
		hash := r.Uint32()
		l := &live{conn: conn{end: t + lifetime(r, c.MeanLife), bucket: wire.BucketOf(hash, uint32(100*n))}}
		l.server = int(beamer.owner(l.bucket) - forwarding.MinServerID)
		l.pserver = published.owner(l.bucket)
		l.mentry = wire.BucketOf(hash, msize)
		l.mserver = mtable[l.mentry]
		for k := 0; k < n; k++ { // next active server in round-robin order
			rr = (rr + 1) % n
			if active[rr] {
				break
			}
		}
		l.cserver = rr
		beamer.open(id(l.server), l.bucket)
		all[&l.conn] = l
		heap.Push(&h, &l.conn)
		if t >= warm && t < warm+c.Duration {
			total++
			countedLive++
			l.counted = true
		}
	}
	// The measured connections are followed to their end, as the paper's
	// definition asks (mapped to two servers "during their starting and
	// ending times"): cutting them off when arrivals stop would miss the
	// later breaks of the longest-lived ones, the connections most likely
	// to break. No more connections arrive; the updates go on.
	draining = true
	for countedLive > 0 && step() {
	}
	// Cheetah: the cookie names the slot the connection started on; the
	// slot keeps its server while any connection names it (removed servers
	// are retired, not reused), so no connection is ever sent elsewhere.
	pct := func(b int) float64 { return 100 * float64(b) / float64(max(total, 1)) }
	return []PCCRow{
		{Design: DesignBeamer, PerMinute: perMinute, Connections: total, Broken: beamerBroken, BrokenPct: pct(beamerBroken),
			Note: "this product: up to K previous owners per bucket, held past the window while connections remain"},
		{Design: DesignBeamerPublished, PerMinute: perMinute, Connections: total, Broken: publishedBroken, BrokenPct: pct(publishedBroken), BrokenByWindow: publishedByWindow,
			Note: "as published (NSDI'18) and as the Cheetah paper models it: one previous owner, fixed window"},
		{Design: DesignMaglev, PerMinute: perMinute, Connections: total, Broken: maglevBroken, BrokenPct: pct(maglevBroken),
			Note: "connections whose Maglev entry changed owner: broken when they reach a mux without their connection-table entry (mux change or restart)"},
		{Design: DesignCheetah, PerMinute: perMinute, Connections: total, Broken: cheetahBroken, BrokenPct: pct(cheetahBroken)},
	}
}
