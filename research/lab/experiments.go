package lab

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Paper is what the Beamer paper (NSDI'18, §6) reports for an experiment,
// printed beside our numbers. The paper's "Stateful" is its own mux with a
// per-flow table: our maglev strategy plays that part.
type Paper struct {
	Source   string `json:"source"`
	Setup    string `json:"setup"`
	Beamer   string `json:"beamer"`
	Stateful string `json:"stateful"`
}

// experiment is a built-in scenario from the paper.
type experiment struct {
	title string
	paper Paper
	// shape sets the experiment's own parameters for a size.
	shape func(p *Params, size string)
	check func(p *Params) error
	// scenario builds the schedule from the parameters.
	scenario func(p *Params) *Scenario
}

// ExperimentOrder is the order of the paper's §6.
var ExperimentOrder = []string{"affinity", "synflood", "mux-churn", "server-churn", "mptcp"}

// ExperimentNames lists the built-in experiments.
func ExperimentNames() string { return strings.Join(ExperimentOrder, ", ") }

// ExperimentTitle is an experiment's one-line description.
func ExperimentTitle(name string) string { return experiments[name].title }

var experiments = map[string]experiment{
	"affinity": {
		title: "connection affinity, scale-down: remove servers, wait, remove a mux (§6, 'Connection affinity')",
		paper: Paper{Source: "Beamer NSDI'18 §6, connection affinity",
			Setup:    "2 muxes, 8 servers; 7 clients × 100 persistent HTTP connections downloading 1 MB files; remove 1–4 servers, wait 30 s, remove one mux",
			Beamer:   "0 broken",
			Stateful: "7–30% of connections broken (1–4 servers removed)"},
		shape: func(p *Params, size string) {
			// One server by default (a short run); `--removed 1-4` runs the
			// paper's sweep, the servers going in one remove-dip request.
			p.Servers, p.Muxes, p.Removed = 8, 2, 1
			if size == SizeDemo {
				p.Servers = 4
			}
		},
		check: needRemoved(2),
		scenario: func(p *Params) *Scenario {
			sc := start("affinity", p.Servers, p.Muxes)
			t := time.Duration(p.Warmup)
			for i := 0; i < p.Removed; i++ {
				sc.at(t, "remove-server", p.Servers-1-i)
			}
			t += time.Duration(p.Step)
			sc.at(t, "remove-mux", p.Muxes-1)
			sc.at(t+time.Duration(p.Step), "end")
			return sc
		},
	},
	"synflood": {
		title: "SYN flood: remove servers while spoofed SYNs flood the VIP, muxes constant (§6, 'SYN flood')",
		paper: Paper{Source: "Beamer NSDI'18 §6, SYN flood",
			Setup:    "as connection affinity, muxes constant, servers removed during a 1 Mpps SYN flood",
			Beamer:   "0 broken",
			Stateful: "breaks connections under the flood (none without it)"},
		shape: func(p *Params, size string) {
			p.Servers, p.Muxes, p.Removed, p.FloodRate = 8, 2, 1, 50_000
			if size == SizeCI || size == SizeDemo {
				p.FloodRate = 20_000
			}
		},
		check: func(p *Params) error {
			if p.FloodRate < 1 || p.FloodRate > MaxFloodRate {
				return fmt.Errorf("flood rate %d: want 1–%d SYNs/s", p.FloodRate, MaxFloodRate)
			}
			return needRemoved(2)(p)
		},
		scenario: func(p *Params) *Scenario {
			sc := start("synflood", p.Servers, p.Muxes)
			t := time.Duration(p.Warmup)
			sc.at(t, "flood-start", p.FloodRate)
			t += time.Duration(p.Step) / 2
			for i := 0; i < p.Removed; i++ {
				sc.at(t, "remove-server", p.Servers-1-i)
			}
			t += time.Duration(p.Step)
			sc.at(t, "flood-stop")
			sc.at(t+time.Duration(p.Step)/2, "end")
			return sc
		},
	},
	"mux-churn": {
		title: "mux churn: add muxes one by one, then kill them (interface down) one by one (§6, Fig. 17)",
		paper: Paper{Source: "Beamer NSDI'18 §6, handling mux churn (Fig. 17)",
			Setup:    "5 clients × several iperf connections, 6 servers; add 3 muxes a minute apart, then kill muxes by bringing their interface down",
			Beamer:   "throughput follows the mux count; not a single connection broken",
			Stateful: "not run in the paper"},
		shape: func(p *Params, size string) { p.Servers, p.Muxes = 4, 3 },
		check: func(p *Params) error {
			if p.Muxes < 2 {
				return fmt.Errorf("mux churn needs at least 2 muxes")
			}
			return nil
		},
		scenario: func(p *Params) *Scenario {
			sc := start("mux-churn", p.Servers, 1)
			t := sc.every(time.Duration(p.Warmup), p.Step, "add-mux", upFrom(1, p.Muxes))
			t = sc.every(t, p.Step, "kill-mux", downTo(1, p.Muxes))
			sc.at(t, "end")
			return sc
		},
	},
	"server-churn": {
		title: "server churn: add servers at intervals; traffic spreads evenly (§6, Fig. 18)",
		paper: Paper{Source: "Beamer NSDI'18 §6, handling server churn (Fig. 18)",
			Setup:    "one mux, 64 B packets; start with one server, add one every 30 s",
			Beamer:   "changes almost instantaneous; traffic evenly balanced across active servers",
			Stateful: "not run in the paper"},
		shape: func(p *Params, size string) {
			p.Servers, p.Muxes, p.Persistent = 4, 1, false
		},
		check: func(p *Params) error { return nil },
		scenario: func(p *Params) *Scenario {
			sc := start("server-churn", 1, p.Muxes)
			sc.at(sc.every(time.Duration(p.Warmup), p.Step, "add-server", upFrom(1, p.Servers)), "end")
			return sc
		},
	},
	"mptcp": {
		title: "MPTCP: two-path clients download while servers are added and muxes killed (§6, Fig. 19–22)",
		paper: Paper{Source: "Beamer NSDI'18 §6, MPTCP (Fig. 19–22)",
			Setup:    "4 MPTCP clients × 10 parallel 100 MB downloads, two paths each; 4 muxes, 1 server; add a server every minute up to 6, then kill muxes down to one",
			Beamer:   "all secondary subflows created, none reset, no failed download; ~30K daisy-chained packets in all, mostly ACKs (~200 KB)",
			Stateful: "fewer than 20% of secondary subflows created"},
		shape: func(p *Params, size string) {
			p.Servers, p.Muxes, p.MPTCP, p.Persistent = 3, 3, true, false
			if size == SizePaper {
				p.Clients, p.PerClient, p.Servers, p.Muxes, p.FileSize = 4, 10, 6, 4, 20<<20
			}
		},
		check: func(p *Params) error {
			if p.Muxes < 2 || p.Servers < 2 {
				return fmt.Errorf("the MPTCP experiment needs at least 2 muxes and 2 servers")
			}
			return nil
		},
		scenario: func(p *Params) *Scenario {
			sc := start("mptcp", 1, p.Muxes)
			t := sc.every(time.Duration(p.Warmup), p.Step, "add-server", upFrom(1, p.Servers))
			t = sc.every(t, p.Step, "kill-mux", downTo(1, p.Muxes))
			sc.at(t, "end")
			return sc
		},
	},
}

func needRemoved(min int) func(p *Params) error {
	return func(p *Params) error {
		switch {
		case p.Muxes < 2:
			return fmt.Errorf("%s needs at least 2 muxes (one is removed)", p.Experiment)
		case p.Removed < 1 || p.Removed > p.Servers-1:
			return fmt.Errorf("servers removed %d: want 1–%d (one server must stay)", p.Removed, p.Servers-1)
		case p.Servers < min:
			return fmt.Errorf("%s needs at least %d servers", p.Experiment, min)
		}
		return nil
	}
}

// start is a scenario with servers 0..servers-1 and muxes 0..muxes-1 up.
func start(name string, servers, muxes int) *Scenario {
	sc := &Scenario{Name: name}
	for i := 0; i < servers; i++ {
		sc.InitialServers = append(sc.InitialServers, i)
	}
	for i := 0; i < muxes; i++ {
		sc.InitialMuxes = append(sc.InitialMuxes, i)
	}
	return sc
}

func (sc *Scenario) at(t time.Duration, action string, args ...int) {
	sc.Events = append(sc.Events, Event{At: t, Action: action, Args: slices.Clone(args)})
}

// every schedules action on each index, one step apart from t, and
// returns the time after the last.
func (sc *Scenario) every(t time.Duration, step Duration, action string, indexes []int) time.Duration {
	for _, i := range indexes {
		sc.at(t, action, i)
		t += time.Duration(step)
	}
	return t
}

// upFrom is lo, lo+1, …, n-1; downTo is n-1, …, lo.
func upFrom(lo, n int) []int {
	var out []int
	for i := lo; i < n; i++ {
		out = append(out, i)
	}
	return out
}

func downTo(lo, n int) []int {
	out := upFrom(lo, n)
	slices.Reverse(out)
	return out
}

// ExperimentScenario is the schedule of a built-in experiment.
func ExperimentScenario(p *Params) (*Scenario, Paper, error) {
	e, ok := experiments[p.Experiment]
	if !ok {
		return nil, Paper{}, fmt.Errorf("unknown experiment %q; experiments: %s", p.Experiment, ExperimentNames())
	}
	sc := e.scenario(p)
	return sc, e.paper, sc.Validate()
}
