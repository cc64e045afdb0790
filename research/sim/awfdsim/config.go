package awfdsim

import "time"

// Config of a simulation run.
type Config struct {
	Flows       int             `json:"flows"`
	MeanGap     time.Duration   `json:"mean_gap"`      // Poisson arrivals
	MeanLife    time.Duration   `json:"mean_duration"` // exponential durations
	MeanRate    float64         `json:"mean_rate_kBps"`
	Alpha       float64         `json:"pareto_alpha"`
	VIPs        int             `json:"vips"`
	DIPsPerVIP  int             `json:"dips_per_vip"`
	Overload    float64         `json:"overload"` // mean demand / capacity
	Warmup      time.Duration   `json:"warmup"`
	Intervals   []time.Duration `json:"intervals"`
	Classes     []int           `json:"classes"` // AWFD m of Fig. 8's curves
	FigM        []int           `json:"fig10_m"` // m of Fig. 10 (0 = ∞)
	FigInterval time.Duration   `json:"fig10_interval"`
	Seeds       []uint64        `json:"seeds"`
}

// Default is the paper's setting (§V-A, Table II).
func Default() Config {
	return Config{
		Flows: 100000, MeanGap: time.Millisecond, MeanLife: 10 * time.Second, MeanRate: 2, Alpha: 2,
		VIPs: 4, DIPsPerVIP: 100, Overload: 1.05, Warmup: 20 * time.Second,
		Intervals:   []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second},
		Classes:     []int{2, 4, 16},
		FigM:        []int{1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 0},
		FigInterval: 500 * time.Millisecond,
		Seeds:       []uint64{1, 2, 3},
	}
}
