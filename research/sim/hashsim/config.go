package hashsim

import (
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
)

// Config sets the size of every experiment. Default is the papers'
// setting; tests use smaller ones where the full size is slow.
type Config struct {
	Seed uint64 `json:"seed"`
	// Reps is how many random server removals each churn figure averages
	// (Maglev averaged 200).
	Reps int `json:"reps"`

	// Table 1 (Beamer appendix): servers, buckets, churn percentages, and
	// the virtual nodes per server of the consistent-hashing ring there.
	Table1Servers int      `json:"table1_servers"`
	Table1Buckets uint32   `json:"table1_buckets"`
	Table1Churn   []int    `json:"table1_churn_pct"`
	Table1VNodes  int      `json:"table1_vnodes"`
	BalanceSizes  []uint32 `json:"balance_table_sizes"` // Maglev figure: table sizes
	BalanceReps   int      `json:"balance_reps"`        // backend id draws averaged
	Backends      int      `json:"balance_backends"`
	// KargerVNodes: the Maglev paper sets Karger's number of views to 1000;
	// we read views as points per backend.
	KargerVNodes int `json:"karger_vnodes"`
	// ResilienceFailures are the concurrent-failure percentages of the
	// Maglev resilience figure.
	ResilienceFailures []float64 `json:"resilience_failures_pct"`

	// BuildTimeRuns bounds the timed builds per algorithm and size.
	BuildTimeRuns int `json:"build_time_runs"`

	// Fragmentation table and defragmentation run (Beamer appendix).
	FragDIPs    int                 `json:"frag_dips"`
	FragBuckets uint32              `json:"frag_buckets"`
	Defrag      assign.DefragParams `json:"defrag"`

	// Scale (Beamer §6.4): DIPs × buckets per DIP and the DIP counts added
	// and removed. Run only when Scale is set.
	Scale        bool  `json:"scale"`
	ScaleDIPs    int   `json:"scale_dips"`
	ScalePerDIP  int   `json:"scale_buckets_per_dip"`
	ScaleChanges []int `json:"scale_changes"`
}

// Default is the papers' setting.
func Default() Config {
	return Config{
		Seed:               1,
		Reps:               20,
		Table1Servers:      1000,
		Table1Buckets:      assign.MaglevSmallTable,
		Table1Churn:        []int{1, 5},
		Table1VNodes:       10,
		BalanceSizes:       []uint32{assign.MaglevSmallTable, assign.MaglevLargeTable},
		BalanceReps:        5,
		Backends:           1000,
		KargerVNodes:       1000,
		ResilienceFailures: []float64{0.5, 1, 2, 4, 6, 8, 10},
		BuildTimeRuns:      20,
		FragDIPs:           10000,
		FragBuckets:        1000000,
		Defrag:             assign.DefragParams{Threshold: 1, TargetRate: 1, MaxMoves: 10},
		ScaleDIPs:          64000,
		ScalePerDIP:        100,
		ScaleChanges:       []int{1, 1000, 32000},
	}
}

// ErrConfig wraps configuration errors.
var ErrConfig = errors.New("hashsim: invalid configuration")

// maxServers is how many distinct server ids exist.
const maxServers = 65535 - 1025 + 1

// Validate says what is wrong with c.
func (c Config) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(f, a...)) }
	switch {
	case c.Reps < 1 || c.BalanceReps < 1:
		return bad("repetitions (%d, balance %d) must be ≥ 1", c.Reps, c.BalanceReps)
	case c.Table1Servers < 2 || c.Table1Servers > maxServers || uint32(c.Table1Servers) > c.Table1Buckets:
		return bad("table 1 needs 2–%d servers and at least as many buckets (got %d servers, %d buckets)", maxServers, c.Table1Servers, c.Table1Buckets)
	case c.Table1VNodes < 1 || c.KargerVNodes < 1:
		return bad("virtual nodes per server must be ≥ 1")
	case c.Backends < 2 || c.Backends > maxServers:
		return bad("backends %d must be 2–%d", c.Backends, maxServers)
	case c.BuildTimeRuns < 1:
		return bad("build time runs %d must be ≥ 1", c.BuildTimeRuns)
	case c.FragDIPs < 2 || 2*c.FragDIPs > maxServers || uint32(c.FragDIPs) > c.FragBuckets:
		return bad("fragmentation needs 2–%d DIPs (it doubles them) and at least as many buckets", maxServers/2)
	case c.Scale && (c.ScaleDIPs < 2 || c.ScaleDIPs > maxServers || c.ScalePerDIP < 1 || c.ScaleDIPs*c.ScalePerDIP > assign.MaxTableSize):
		return bad("scale needs 2–%d DIPs and at most %d buckets in all", maxServers, assign.MaxTableSize)
	}
	for _, p := range c.Table1Churn {
		if p < 1 || p >= 100 {
			return bad("churn %d%% must be 1–99", p)
		}
	}
	for _, s := range c.BalanceSizes {
		if s < uint32(c.Backends) || s > assign.MaxTableSize {
			return bad("table size %d must hold all %d backends and be ≤ %d", s, c.Backends, assign.MaxTableSize)
		}
	}
	for _, f := range c.ResilienceFailures {
		if !(f > 0 && f < 100) {
			return bad("failure percentage %v must be in (0, 100)", f)
		}
	}
	for _, k := range c.ScaleChanges {
		if c.Scale && (k < 1 || k >= c.ScaleDIPs) {
			return bad("scale change of %d DIPs must be 1–%d", k, c.ScaleDIPs-1)
		}
	}
	return c.Defrag.Validate()
}
