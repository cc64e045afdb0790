package migration

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// The simulations behind `beamer-lab sim prism` (docs/strategy-prism.md): the
// paper's §4 and Appendix A experiments on a synthetic workload, scaled down
// where the paper's connection counts do not fit a test machine. Scaling is
// by the SYN rate only: shares (the % of connections in the MCT) do not
// depend on it, absolute counts (signatures per update) scale linearly and
// are reported both as measured and multiplied back.

// SimOptions scale the simulations.
type SimOptions struct {
	Seeds    int     // repetitions per point (paper: 5)
	Scale    float64 // SYN rate divisor for Fig. 6 / Table 1 (paper rate / Scale)
	Duration float64 // seconds of Fig. 6 runs (paper: 500)
	Runs     int     // Algorithm 1 runs per write rate (paper: 2,000)
	Alg2Rate float64 // SYNs/s of the Appendix A VIP (paper: 10,000)
}

// DefaultSimOptions run in about a minute on one core (the paper: 5 seeds,
// 500 s, 2,000 runs; give them with the flags).
func DefaultSimOptions() SimOptions {
	return SimOptions{Seeds: 3, Scale: 100, Duration: 300, Runs: 1000, Alg2Rate: 1000}
}

// Fig6Point is one update rate of Fig. 6 and Table 1.
type Fig6Point struct {
	UpdatesPerMin  float64 `json:"updates_per_min"`
	Lifetime       string  `json:"lifetime"`        // e.g. "U[1,10] s"
	MaxPctInMCT    float64 `json:"max_pct_in_mct"`  // highest sample of 100·MCT/active
	MeanPctInMCT   float64 `json:"mean_pct_in_mct"` // after the first 50 s
	MigratedPerUpd float64 `json:"migrated_per_update_measured"`
	MigratedScaled float64 `json:"migrated_per_update_at_paper_rate"`
}

// event queue of connection ends
type endQ []float64

func (q endQ) Len() int           { return len(q) }
func (q endQ) Less(i, j int) bool { return q[i] < q[j] }
func (q endQ) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *endQ) Push(x any)        { *q = append(*q, x.(float64)) }
func (q *endQ) Pop() any          { o := *q; x := o[len(o)-1]; *q = o[:len(o)-1]; return x }

// Fig6 is §4's simulation: 100 VIPs × 100 DIPs, one bin per DIP, SYNs at
// 1M/s over all VIPs (divided by Scale), lifetimes uniform in [lo, hi]
// seconds; at the given rate a random DIP is replaced by a new one, every
// live connection of its bin migrates into the MCT and leaves it when it
// ends (its FIN, or the keep-alive sweep).
func Fig6(o SimOptions, updatesPerMin, lo, hi float64, seed uint64) (maxPct, meanPct, perUpdate float64) {
	const vips, bins = 100, 100
	rng := rand.New(rand.NewPCG(seed, 0x6f))
	rate := 1e6 / o.Scale
	// Per bin: the end times of its live connections not in the MCT.
	live := make([]endQ, vips*bins)
	var mct endQ // end times of migrated connections
	active := 0
	now, nextSyn := 0.0, rng.ExpFloat64()/rate
	nextUpd := math.Inf(1)
	if updatesPerMin > 0 {
		nextUpd = rng.ExpFloat64() * 60 / updatesPerMin
	}
	var samples []float64
	nextSample := 1.0
	updates, migrated := 0, 0
	for now < o.Duration {
		t := min(nextSyn, nextUpd, nextSample)
		now = t
		switch t {
		case nextSyn:
			b := rng.IntN(vips * bins)
			heap.Push(&live[b], now+lo+(hi-lo)*rng.Float64())
			active++
			nextSyn = now + rng.ExpFloat64()/rate
		case nextUpd:
			b := rng.IntN(vips * bins)
			for _, end := range live[b] {
				if end > now {
					heap.Push(&mct, end)
					migrated++
				}
			}
			live[b] = live[b][:0]
			updates++
			nextUpd = now + rng.ExpFloat64()*60/updatesPerMin
		default:
			// Ends up to now: connections leave the SCT, and the MCT.
			for i := range live {
				for live[i].Len() > 0 && live[i][0] <= now {
					heap.Pop(&live[i])
					active--
				}
			}
			for mct.Len() > 0 && mct[0] <= now {
				heap.Pop(&mct)
				active--
			}
			if active > 0 {
				samples = append(samples, 100*float64(mct.Len())/float64(active))
			}
			nextSample = now + 1
		}
	}
	for i, s := range samples {
		maxPct = max(maxPct, s)
		if i >= 50 {
			meanPct += s
		}
	}
	if len(samples) > 50 {
		meanPct /= float64(len(samples) - 50)
	}
	if updates > 0 {
		perUpdate = float64(migrated) / float64(updates)
	}
	return maxPct, meanPct, perUpdate
}

// Fig7Point is one MCT write rate of Fig. 7: the mean number of new
// signatures found by each round of Algorithm 1 (round 1: the bin's
// initial signatures), and how many runs needed each number of rounds.
type Fig7Point struct {
	WriteRate   float64   `json:"mct_writes_per_s"`
	MeanNew     []float64 `json:"mean_new_per_round"`
	RoundsCount []int     `json:"runs_by_rounds"` // index r-1: runs that took r rounds (last one brings none)
	MaxRounds   int       `json:"max_rounds"`
}

// Fig7 runs Algorithm 1 (Migrate, the controller's code) on a bin with c1
// affected signatures receiving delta new SYNs per second, with rho MCT
// writes per second: round i lasts C_i/rho seconds, during which a Poisson
// number of SYNs reach the bin.
func Fig7(rho, c1, delta float64, runs int, seed uint64) Fig7Point {
	rng := rand.New(rand.NewPCG(seed, 0x77))
	p := Fig7Point{WriteRate: rho}
	var sums []float64
	for range runs {
		_, rounds, _ := Migrate(binSCT(rng, rho, delta, int(c1)), 64)
		for len(sums) < len(rounds) {
			sums = append(sums, 0)
		}
		for i, r := range rounds {
			sums[i] += float64(r.New)
		}
		for len(p.RoundsCount) < len(rounds) {
			p.RoundsCount = append(p.RoundsCount, 0)
		}
		p.RoundsCount[len(rounds)-1]++
		p.MaxRounds = max(p.MaxRounds, len(rounds))
	}
	for _, s := range sums {
		p.MeanNew = append(p.MeanNew, s/float64(runs))
	}
	return p
}

// binSCT is the SCT as Algorithm 1 sees it during one migration: the bin's
// c1 signatures, plus, at each later poll, the SYNs that arrived while the
// previous round copied its new signatures (T_i = C_i/rho).
func binSCT(rng *rand.Rand, rho, delta float64, c1 int) func() (map[uint64]forwarding.ServerID, error) {
	sigs := map[uint64]forwarding.ServerID{}
	n := uint64(0)
	lastNew := c1
	first := true
	return func() (map[uint64]forwarding.ServerID, error) {
		add := c1
		if !first {
			add = poisson(rng, delta*float64(lastNew)/rho)
		}
		first = false
		for range add {
			n++
			sigs[n] = 1
		}
		lastNew = add
		return sigs, nil // Migrate only reads it before the next poll
	}
}

func poisson(rng *rand.Rand, mean float64) int {
	if mean <= 0 {
		return 0
	}
	if mean > 50 {
		return max(0, int(math.Round(mean+math.Sqrt(mean)*rng.NormFloat64())))
	}
	l, k, p := math.Exp(-mean), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// Alg2Point is Appendix A (Fig. 14) for one expected lifetime: the MCT load
// (integral of entries over time, entry·seconds) when a quarter of a VIP's
// bins are taken down one by one, bins chosen at random, by fewest
// connections, or by Algorithm 2.
type Alg2Point struct {
	Lifetime    float64 `json:"lifetime_s"`
	Random      float64 `json:"random_entry_s"`
	NonWeighted float64 `json:"fewest_entry_s"`
	Alg2        float64 `json:"alg2_entry_s"`
	GainNW      float64 `json:"fewest_gain_pct"`
	GainAlg2    float64 `json:"alg2_gain_pct"`
}

type simConn struct{ start, end float64 }

// Alg2 simulates a VIP of 1,000 DIPs, one bin each, SYNs at rate/s with
// lifetimes uniform in [0, 2T] (mean T), warmed up for 2T, then 250 bins
// taken down one per second, each chosen by the method; every migrated
// connection stays in the MCT until it ends.
func Alg2(rate, T float64, method Choice, weighted bool, seed uint64) float64 {
	const bins, down = 1000, 250
	rng := rand.New(rand.NewPCG(seed, 0xa2))
	conns := make([][]simConn, bins)
	now := 0.0
	warm := 2 * T
	for now < warm {
		now += rng.ExpFloat64() / rate
		b := rng.IntN(bins)
		conns[b] = append(conns[b], simConn{now, now + 2*T*rng.Float64()})
	}
	pool := make([]uint32, bins)
	for i := range pool {
		pool[i] = uint32(i)
	}
	load := 0.0
	for k := 0; k < down; k++ {
		// A second of SYNs.
		end := now + 1
		for {
			t := now + rng.ExpFloat64()/rate
			if t > end {
				break
			}
			now = t
			b := rng.IntN(bins)
			conns[b] = append(conns[b], simConn{now, now + 2*T*rng.Float64()})
		}
		now = end
		w := map[uint32]float64{}
		for _, b := range pool {
			live := conns[b][:0]
			for _, c := range conns[b] {
				if c.end > now {
					live = append(live, c)
				}
			}
			conns[b] = live
			for _, c := range live {
				if weighted {
					w[b] += ExpectedStay(T, now-c.start) + 1e-3
				} else {
					w[b]++
				}
			}
		}
		var chosen uint32
		if method == Random {
			i := rng.IntN(len(pool))
			chosen = pool[i]
		} else {
			chosen = ChooseBins(append([]uint32(nil), pool...), w, 1)[0]
		}
		for _, c := range conns[chosen] {
			load += c.end - now
		}
		conns[chosen] = nil
		for i, b := range pool {
			if b == chosen {
				pool = append(pool[:i], pool[i+1:]...)
				break
			}
		}
	}
	return load
}

// CollisionPoint compares the birthday approximation with signatures
// actually computed (wire.Flow.Signature) for random flows, at a reduced
// width where collisions are frequent enough to count.
type CollisionPoint struct {
	Bits      int     `json:"hash_bits"`
	SYNs      int     `json:"syns_in_window"`
	Predicted float64 `json:"predicted_pairs"` // n(n-1)/2 / 2^bits
	Measured  float64 `json:"measured_pairs"`
}

// Collisions counts colliding pairs among n random flows' signatures
// truncated to their low bits (hash part only).
func Collisions(bits, n int, seed uint64) CollisionPoint {
	rng := rand.New(rand.NewPCG(seed, 0xc0))
	seen := map[uint64]int{}
	vip := netip.MustParseAddr("198.18.0.1")
	for range n {
		a := rng.Uint32()
		f := wire.Flow{Src: netip.AddrFrom4([4]byte{byte(a >> 24), byte(a >> 16), byte(a >> 8), byte(a)}), Dst: vip,
			SrcPort: uint16(rng.Uint32()), DstPort: 80, Proto: wire.ProtoTCP}
		seen[f.Signature()&(1<<bits-1)]++
	}
	pairs := 0.0
	for _, c := range seen {
		pairs += float64(c*(c-1)) / 2
	}
	return CollisionPoint{Bits: bits, SYNs: n, Predicted: float64(n) * float64(n-1) / 2 / math.Exp2(float64(bits)), Measured: pairs}
}

// SecondsBetweenCollisions is §5.3's figure: the expected time between two
// SYNs with equal signatures inside a window of delta seconds, at rate SYNs
// per second, with a hash of the given width: 1/p(n; 2^bits) windows...
// expressed in seconds as the paper does (1/p seconds).
func SecondsBetweenCollisions(rate, delta float64, bits int) float64 {
	n := rate * delta
	p := -math.Expm1(-n * n / (2 * math.Exp2(float64(bits))))
	return 1 / p
}
