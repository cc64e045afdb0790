package hashsim

import (
	"slices"
	"time"
)

// BuildTimeRow is the time to build one table from scratch: the median of
// up to BuildTimeRuns builds (fewer if they exceed a second in total).
type BuildTimeRow struct {
	Algorithm string   `json:"algorithm"`
	TableSize uint32   `json:"table_size"`
	Backends  int      `json:"backends"`
	Ms        float64  `json:"ms"`
	Runs      int      `json:"runs"`
	PaperMs   *float64 `json:"paper_ms,omitempty"`
}

// BuildTimes times every algorithm at the balance sizes. Maglev §5.3
// reports 1.8 ms (65537) and 22.9 ms (655373) for Maglev with 1000
// backends, on their hardware.
func BuildTimes(c Config) ([]BuildTimeRow, error) {
	servers := equalServers(c.Backends)
	paper := map[string]map[uint32]float64{"maglev": {65537: 1.8, 655373: 22.9}} // by algorithm, then size
	var rows []BuildTimeRow
	for _, size := range c.BalanceSizes {
		for _, alg := range []algorithm{maglev(), consistent(c.KargerVNodes), rendezvous(), stable()} {
			var runs []time.Duration
			var total time.Duration
			for len(runs) < c.BuildTimeRuns && (len(runs) < 3 || total < time.Second) {
				start := time.Now()
				if _, err := alg.build(nil, servers, size); err != nil {
					return nil, err
				}
				d := time.Since(start)
				runs = append(runs, d)
				total += d
			}
			slices.Sort(runs)
			row := BuildTimeRow{Algorithm: alg.name, TableSize: size, Backends: c.Backends,
				Ms: float64(runs[len(runs)/2].Microseconds()) / 1000, Runs: len(runs)}
			if p, ok := paper[alg.name][size]; ok {
				row.PaperMs = &p
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}
