package hashsim

import (
	"math/rand/v2"
)

// BalanceRow is one bar of Maglev's load-balancing figure: how much the
// busiest backend must be over-provisioned, (max/average − 1) in percent.
type BalanceRow struct {
	Algorithm             string   `json:"algorithm"`
	TableSize             uint32   `json:"table_size"`
	Backends              int      `json:"backends"`
	OverprovisionPct      float64  `json:"overprovision_pct"`
	PaperOverprovisionPct *float64 `json:"paper_overprovision_pct"`
}

// paperBalance: Maglev §5.3 gives Karger 29.7% → 10.3% and Rendezvous
// 49.5% → 12.3% at 65537 → 655373 entries, and Maglev as near perfect.
func paperBalance(alg string, size uint32) *float64 {
	v := map[string]map[uint32]float64{
		"consistent": {65537: 29.7, 655373: 10.3},
		"rendezvous": {65537: 49.5, 655373: 12.3},
	}[alg]
	if p, ok := v[size]; ok {
		return &p
	}
	return nil
}

// Balance builds every algorithm's table for Backends equal backends at
// each size (Karger with KargerVNodes points per backend), averaging over
// BalanceReps draws of backend ids: the busiest of 1000 backends is a tail
// event, and one draw can be far from the typical one.
func Balance(c Config) ([]BalanceRow, error) {
	var rows []BalanceRow
	for _, size := range c.BalanceSizes {
		for _, alg := range []algorithm{maglev(), consistent(c.KargerVNodes), rendezvous(), stable()} {
			r := rand.New(rand.NewPCG(c.Seed, 2))
			row := BalanceRow{alg.name, size, c.Backends, 0, paperBalance(alg.name, size)}
			for range c.BalanceReps {
				servers := randomServers(r, c.Backends)
				t, err := alg.build(nil, servers, size)
				if err != nil {
					return nil, err
				}
				row.OverprovisionPct += 100 * (imbalance(t, servers) - 1) / float64(c.BalanceReps)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// ResilienceRow is one point of Maglev's resilience figure: the share of
// table entries that change when k backends fail at once, averaged over
// Reps random choices. (Karger and Rendezvous change only the failed
// backends' entries, k/N of the table, by construction.)
type ResilienceRow struct {
	TableSize  uint32  `json:"table_size"`
	Backends   int     `json:"backends"`
	FailurePct float64 `json:"failures_pct"`
	Failed     int     `json:"failed"`
	ChangedPct float64 `json:"changed_pct"`
	// MinimumPct is what any algorithm must change: the failed backends'
	// own entries.
	MinimumPct float64 `json:"minimum_pct"`
}

// Resilience runs the Maglev resilience experiment.
func Resilience(c Config) ([]ResilienceRow, error) {
	servers := equalServers(c.Backends)
	var rows []ResilienceRow
	for _, size := range c.BalanceSizes {
		before, err := maglev().build(nil, servers, size)
		if err != nil {
			return nil, err
		}
		for _, f := range c.ResilienceFailures {
			k := max(1, int(float64(c.Backends)*f/100+0.5))
			row := ResilienceRow{TableSize: size, Backends: c.Backends, FailurePct: f, Failed: k}
			r := rand.New(rand.NewPCG(c.Seed, uint64(size)+uint64(k)<<32))
			for range c.Reps {
				survivors, gone := removeRandom(r, servers, k)
				after, err := maglev().build(nil, survivors, size)
				if err != nil {
					return nil, err
				}
				innocent, changed := disruption(before, after, gone)
				row.ChangedPct += changed / float64(c.Reps)
				row.MinimumPct += (changed - innocent) / float64(c.Reps)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}
