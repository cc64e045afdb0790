package lab

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"time"
)

// The AWFD experiment (Spotlight §V-B, issue 14): servers of unequal
// capacity (tbf 2:1 on their links), open-loop HTTP downloads of Pareto
// sizes near the pool's full capacity, one fresh lab per run. Each variant
// — AWFD with m classes and a poll interval, Beamer with equal weights,
// Maglev — reports aggregate throughput and mean flow completion time;
// AWFD variants may lose a share of their class records at the muxes
// (--awfd-drop), Spotlight's Fig. 14.

// AWFDVariant is one configuration compared.
type AWFDVariant struct {
	Name     string        `json:"name"`
	Strategy string        `json:"strategy"`
	Classes  int           `json:"classes,omitempty"`
	Poll     time.Duration `json:"poll,omitempty"`
	Drop     float64       `json:"drop,omitempty"` // share of records lost at each mux
}

// AWFDExperiment shapes the experiment.
type AWFDExperiment struct {
	Beamer string
	// Lab is the beamer-lab binary: the variants that lose class records
	// (Drop) run its mux, the product's with the loss around its store.
	Lab      string
	Dir      string
	Servers  int
	Muxes    int
	Clients  int
	Rates    []float64 // server link rates, bit/s (cycled over servers)
	Load     float64   // offered load / Σ rates
	Flow     FlowOptions
	Reps     int
	Variants []AWFDVariant
	Progress io.Writer
}

// AWFDRun is one variant's result in one repetition.
type AWFDRun struct {
	Variant AWFDVariant       `json:"variant"`
	Rep     int               `json:"rep"`
	Flows   FlowResult        `json:"flows"`
	AWFD    map[string]uint64 `json:"awfd_decisions,omitempty"` // the muxes' awfd counters
}

// AWFDSummary is a variant's mean and standard error over repetitions.
type AWFDSummary struct {
	Variant       AWFDVariant `json:"variant"`
	Throughput    float64     `json:"throughput_mbps"`
	ThroughputErr float64     `json:"throughput_stderr"`
	MeanFCT       float64     `json:"mean_fct_ms"`
	MeanFCTErr    float64     `json:"mean_fct_stderr"`
	P99FCT        float64     `json:"p99_fct_ms"` // mean over repetitions of each run's p99
	P99FCTErr     float64     `json:"p99_fct_stderr"`
	P99Short      float64     `json:"p99_fct_short_ms"` // the same for downloads ≤ ShortFlow
	P99ShortErr   float64     `json:"p99_fct_short_stderr"`
	Failed        int         `json:"failed"`
}

// AWFDResult is the whole experiment.
type AWFDResult struct {
	Capacity float64       `json:"capacity_mbps"` // Σ server rates
	Offered  float64       `json:"offered_mbps"`
	Runs     []AWFDRun     `json:"runs"`
	Summary  []AWFDSummary `json:"summary"`
}

// RunAWFDExperiment runs every variant Reps times, each on a fresh lab.
func RunAWFDExperiment(ctx context.Context, e AWFDExperiment) (*AWFDResult, error) {
	if e.Servers < 2 || len(e.Rates) == 0 || e.Reps < 1 || e.Flow.MeanSize < 1 || e.Load <= 0 {
		return nil, fmt.Errorf("awfd experiment: bad shape %+v", e)
	}
	capacity := 0.0
	for i := 0; i < e.Servers; i++ {
		capacity += e.Rates[i%len(e.Rates)]
	}
	res := &AWFDResult{Capacity: capacity / 1e6, Offered: e.Load * capacity / 1e6}
	e.Flow.Rate = e.Load * capacity / 8 / float64(e.Flow.MeanSize)
	say := func(format string, a ...any) {
		if e.Progress != nil {
			fmt.Fprintf(e.Progress, format+"\n", a...)
		}
	}
	say("awfd experiment: %d servers (%.0f Mbit/s in all), offered %.0f Mbit/s: %.1f downloads/s of mean %d bytes (Pareto α=%.1f), %v each run",
		e.Servers, res.Capacity, res.Offered, e.Flow.Rate, e.Flow.MeanSize, e.Flow.Alpha, e.Flow.Duration)
	for rep := 0; rep < e.Reps; rep++ {
		for _, v := range e.Variants {
			flow := e.Flow
			flow.Seed = e.Flow.Seed + int64(rep) // sizes shuffled per repetition, the same for every variant
			run, err := runAWFDVariant(ctx, e, v, flow)
			if err != nil {
				return res, fmt.Errorf("%s, repetition %d: %w", v.Name, rep+1, err)
			}
			run.Rep = rep
			res.Runs = append(res.Runs, *run)
			say("  %-22s rep %d: %7.1f Mbit/s, mean FCT %7.0f ms, p99 %6.0f ms (≤ 100 KiB: %5.0f ms), %d/%d completed, %d failed%s",
				v.Name, rep+1, run.Flows.Throughput, run.Flows.MeanFCT, run.Flows.P99FCT, run.Flows.P99FCTShort, run.Flows.Completed, run.Flows.Started, run.Flows.Failed,
				decisions(run.AWFD))
		}
	}
	for _, v := range e.Variants {
		var tp, fct, p99, short []float64
		s := AWFDSummary{Variant: v}
		for _, r := range res.Runs {
			if r.Variant == v {
				tp = append(tp, r.Flows.Throughput)
				fct = append(fct, r.Flows.MeanFCT)
				p99 = append(p99, r.Flows.P99FCT)
				short = append(short, r.Flows.P99FCTShort)
				s.Failed += r.Flows.Failed
			}
		}
		s.Throughput, s.ThroughputErr = meanErr(tp)
		s.MeanFCT, s.MeanFCTErr = meanErr(fct)
		s.P99FCT, s.P99FCTErr = meanErr(p99)
		s.P99Short, s.P99ShortErr = meanErr(short)
		res.Summary = append(res.Summary, s)
	}
	return res, nil
}

func decisions(c map[string]uint64) string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(" (awfd: %d by class, %d no record, %d no class, %d not active)", c["by_class"], c["no_record"], c["no_class"], c["not_active"])
}

func meanErr(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	if len(xs) < 2 {
		return m, 0
	}
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}

func runAWFDVariant(ctx context.Context, e AWFDExperiment, v AWFDVariant, flow FlowOptions) (run *AWFDRun, err error) {
	dir, err := os.MkdirTemp(e.Dir, "awfd-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	o := Options{Beamer: e.Beamer, Dir: dir, Clients: e.Clients, Muxes: e.Muxes, Servers: e.Servers, Buckets: 1009,
		FileSize: 1 << 10, Strategy: v.Strategy, Store: "embedded", Seed: 1, ServerRates: e.Rates}
	strat, err := StrategyOf(v.Strategy)
	if err != nil {
		return nil, err
	}
	if strat.AgentWindow(4*time.Minute) > 0 {
		// Servers that chain (Beamer; Cheetah, whose fallback for clients
		// without timestamps is Beamer's) chain for the paper's window.
		o.Window = 4 * time.Minute
	}
	if v.Classes > 0 {
		o.CreateArgs = []string{"--classes", fmt.Sprint(v.Classes), "--poll", v.Poll.String()}
	}
	if v.Drop > 0 {
		if e.Lab == "" {
			return nil, fmt.Errorf("variant %s loses class records: it needs the beamer-lab binary (AWFDExperiment.Lab) for its muxes", v.Name)
		}
		o.MuxBinary = e.Lab
		o.MuxArgs = []string{"--awfd-drop", fmt.Sprint(v.Drop)}
	}
	l, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := l.Close(); err == nil {
			err = cerr
		}
	}()
	if err := l.CreateInstance(); err != nil {
		return nil, err
	}
	for i := 0; i < e.Servers; i++ {
		if err := l.AddServer(i); err != nil {
			return nil, err
		}
	}
	for i := 0; i < e.Muxes; i++ {
		if err := l.StartMux(ctx, i); err != nil {
			return nil, err
		}
	}
	if err := l.checkReachable(ctx, 15*time.Second); err != nil {
		return nil, err
	}
	time.Sleep(2 * time.Second) // health checks pass, the first class records arrive
	run = &AWFDRun{Variant: v, Flows: l.RunFlows(ctx, flow)}
	if dc, ok := strat.(decisionCounters); ok {
		run.AWFD = map[string]uint64{}
		for _, m := range l.muxes {
			c, err := scrapeCounters(m.ns, dc.decisionCounters())
			if err != nil {
				return nil, err
			}
			for k, x := range c {
				run.AWFD[k] += x
			}
		}
	}
	return run, nil
}
