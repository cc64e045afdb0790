package lab

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Result is one run, as `beamer-lab lab run --json` prints it.
type Result struct {
	Scenario       string         `json:"scenario"`
	Strategy       string         `json:"strategy"`
	Connections    int            `json:"connections"`
	Broken         int            `json:"broken"`
	BrokenPct      float64        `json:"broken_pct"`
	BrokenReasons  map[string]int `json:"broken_reasons,omitempty"`
	BrokenByKind   map[string]int `json:"broken_by_kind,omitempty"`   // busy, idle, short
	BrokenByServer map[string]int `json:"broken_by_server,omitempty"` // last server that answered on them
	// BrokenOnFailed counts the broken connections last served by a
	// server that fail-server stopped (link down, daemons gone): no load
	// balancer can keep those. Broken − BrokenOnFailed is the load
	// balancer's doing.
	BrokenOnFailed      int                `json:"broken_on_failed_servers,omitempty"`
	FailedServers       []string           `json:"failed_servers,omitempty"`
	IdleConnections     int                `json:"idle_connections,omitempty"`
	SubflowsExpected    int                `json:"subflows_expected"`
	SubflowsEstablished int                `json:"subflows_established"`
	SubflowsMissing     map[string]int     `json:"subflows_missing,omitempty"` // connections closed without one, by why
	ChainedPackets      uint64             `json:"chained_packets"`
	ChainedPerServer    map[string]uint64  `json:"chained_per_server,omitempty"`
	Downloads           int                `json:"downloads"`
	BytesReceived       uint64             `json:"bytes_received"`
	MeanGbps            float64            `json:"mean_gbps"`
	FCTMedianMs         float64            `json:"fct_median_ms"`
	FCTP99Ms            float64            `json:"fct_p99_ms"`
	ServerShare         map[string]float64 `json:"server_share_last_step,omitempty"` // fraction of bytes per server after the last event but one
	Flood               *FloodResult       `json:"flood,omitempty"`
	MuxCounters         map[string]uint64  `json:"mux_counters,omitempty"`
	// CheetahCounters: the cheetah decisions of the muxes running at the
	// end (cookie hits by key id, bad cookies, fallbacks).
	CheetahCounters map[string]uint64            `json:"cheetah_counters,omitempty"`
	AgentCounters   map[string]map[string]uint64 `json:"agent_counters,omitempty"`
	Events          []EventLog                   `json:"events"`
	Parameters      Params                       `json:"parameters"`
	Paper           Paper                        `json:"paper"`
	Churn           *Churn                       `json:"churn,omitempty"` // with its seed
	// Final is the instance as the controller left it at the end: servers
	// marked down by health checks, buckets without an owner.
	Final *InstanceState `json:"final_state,omitempty"`
	// Heirs: what remove-heir followed and the controller's K-limit
	// counters (heir.go).
	Heirs       *HeirReport  `json:"heirs,omitempty"`
	Timeline    []Sample     `json:"timeline,omitempty"`
	FCTs        []FCT        `json:"-"`
	BrokenConns []BrokenConn `json:"broken_connections,omitempty"`
}

// FloodResult is the SYN flood as sent.
type FloodResult struct {
	AskedPPS    int     `json:"asked_pps"`
	AchievedPPS float64 `json:"achieved_pps"`
	Sent        uint64  `json:"sent"`
}

func (r *runner) result(lr LoadResult, tl []Sample, events []EventLog) *Result {
	res := &Result{Scenario: r.sc.Name, Strategy: r.p.Strategy, Connections: lr.Connections, Broken: lr.Broken,
		SubflowsExpected: lr.MPTCPConnections, SubflowsEstablished: lr.SubflowsEstablished, SubflowsMissing: lr.SubflowsMissing,
		Downloads: lr.Requests, BytesReceived: lr.Bytes, Events: events, Parameters: r.p, Timeline: tl,
		FCTs: lr.FCTs, BrokenConns: lr.BrokenConns, BrokenReasons: map[string]int{},
		BrokenByKind: lr.BrokenByKind, IdleConnections: lr.IdleConnections}
	if lr.Connections > 0 {
		res.BrokenPct = math.Round(10000*float64(lr.Broken)/float64(lr.Connections)) / 100
	}
	res.BrokenByServer = map[string]int{}
	for _, b := range lr.BrokenConns {
		res.BrokenReasons[b.Reason]++
		srv := b.Server
		if srv == "" {
			srv = "none" // broke before any response
		}
		res.BrokenByServer[srv]++
	}
	res.FailedServers = r.failed
	for _, f := range r.failed {
		res.BrokenOnFailed += res.BrokenByServer[f]
	}
	if len(lr.BrokenConns) > 20 {
		res.BrokenConns = lr.BrokenConns[:20] // the reasons sum them all
	}
	if d := r.sc.Duration().Seconds(); d > 0 {
		res.MeanGbps = math.Round(100*float64(lr.Bytes)*8/1e9/d) / 100
	}
	durs := make([]time.Duration, len(lr.FCTs))
	for i, f := range lr.FCTs {
		durs[i] = f.Duration
	}
	res.FCTMedianMs, res.FCTP99Ms = ms(percentile(durs, 50)), ms(percentile(durs, 99))
	res.MuxCounters = r.lab.MuxCounters()
	res.CheetahCounters = r.lab.cheetahCounters()
	res.AgentCounters = r.lab.AgentCounters()
	res.ChainedPerServer = map[string]uint64{}
	for name, c := range res.AgentCounters {
		res.ChainedPerServer[name] = c["chained"]
		res.ChainedPackets += c["chained"]
	}
	if f := r.flood; f != nil {
		res.Flood = &FloodResult{AskedPPS: f.Rate, AchievedPPS: math.Round(f.Achieved()), Sent: f.Sent()}
	}
	res.ServerShare = lastStepShare(tl, r.sc)
	res.Churn = r.sc.Churn
	if st, err := r.lab.Instance(); err == nil {
		res.Final = st
	}
	r.controllerCounters()
	res.Heirs = r.heirs
	return res
}

// lastStepShare is each server's share of the bytes served between the
// last event before `end` and the end: how traffic spreads once the last
// change settled.
func lastStepShare(tl []Sample, sc *Scenario) map[string]float64 {
	if len(sc.Events) < 2 {
		return nil
	}
	from := sc.Events[len(sc.Events)-2].At.Seconds() + 1
	sum, total := map[string]float64{}, 0.0
	for _, s := range tl {
		if s.T < from {
			continue
		}
		for k, v := range s.ServerMbps {
			sum[k] += v
			total += v
		}
	}
	if total == 0 {
		return nil
	}
	for k, v := range sum {
		sum[k] = math.Round(1000*v/total) / 1000
	}
	return sum
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(i, 0)]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

// FCTWindow is the median and 99th percentile of the downloads completed
// in one time window.
type FCTWindow struct {
	T, MedianMs, P99Ms float64
	N                  int
}

// FCTOverTime groups downloads by completion time into windows.
func FCTOverTime(fcts []FCT, window time.Duration) []FCTWindow {
	by := map[int64][]time.Duration{}
	for _, f := range fcts {
		k := int64(f.At / window)
		by[k] = append(by[k], f.Duration)
	}
	keys := make([]int64, 0, len(by))
	for k := range by {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var out []FCTWindow
	for _, k := range keys {
		out = append(out, FCTWindow{T: (time.Duration(k)*window + window/2).Seconds(),
			MedianMs: ms(percentile(by[k], 50)), P99Ms: ms(percentile(by[k], 99)), N: len(by[k])})
	}
	return out
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
