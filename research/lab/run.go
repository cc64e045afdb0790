package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// RunOptions are one run: parameters, schedule, where to report.
type RunOptions struct {
	Params   Params
	Scenario *Scenario // nil: the built-in experiment's
	Beamer   string    // beamer binary for the daemons (default: this executable)
	Dir      string    // run directory kept for inspection; "" = a temporary one, removed
	Progress io.Writer // progress lines; nil = quiet
	// Inventory, if set, receives what the lab made once it is closed
	// (the clean-up test checks that none of it remains).
	Inventory func(*Inventory)
}

// Run builds a lab, plays the scenario with the clients' load running,
// counts what the clients saw, and removes everything, also on error or
// when ctx ends (Ctrl-C).
func Run(ctx context.Context, o RunOptions) (res *Result, err error) {
	p := o.Params
	if err := p.Validate(); err != nil {
		return nil, err
	}
	sc, paper := o.Scenario, Paper{}
	if sc == nil {
		if sc, paper, err = ExperimentScenario(&p); err != nil {
			return nil, err
		}
	} else if err := sc.Validate(); err != nil {
		return nil, err
	}
	if sc, err = sc.Expanded(p.Seed); err != nil {
		return nil, err
	}
	if sc.Window > 0 {
		p.Window = Duration(sc.Window)
	}
	servers, muxes := sc.Needs()
	if p.Experiment == "" {
		p.Experiment = "scenario"
	}
	p.Servers, p.Muxes = servers, muxes
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "beamer-lab-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &runner{p: p, sc: sc, out: o.Progress}
	r.say("%s/%s: building the lab: router (FRR bgpd), %d muxes, %d servers, %d clients, controller (%s store); chaining window %v, seed %d%s%s",
		sc.Name, p.Strategy, muxes, servers, p.Clients, p.Store, time.Duration(p.Window), p.Seed, encapNote(p.Encap), familyNote(p.Family))
	if c := sc.Churn; c != nil {
		r.say("churn: %d random server events from %v to %v, drawn from seed %d (replay: --seed %d)",
			len(sc.Events)-1, c.From, c.Until, c.Seed, c.Seed)
	}
	l, err := Start(ctx, Options{Beamer: o.Beamer, Dir: dir, Clients: p.Clients, Muxes: muxes, Servers: servers,
		Buckets: p.Buckets, Window: time.Duration(p.Window), FileSize: p.FileSize, Strategy: p.Strategy,
		Store: p.Store, Seed: p.Seed, BindVIP: sc.BindVIP, UDP: p.UDPFlows > 0, QUIC: p.QUICFlows > 0, Encap: p.Encap, Family: p.Family,
		HoldInterval: sc.HoldInterval, EvictOldest: sc.EvictOldest})
	if err != nil {
		return nil, err
	}
	r.lab = l
	defer func() {
		if err != nil && !errors.Is(err, context.Canceled) && o.Progress != nil {
			fmt.Fprintf(o.Progress, "router: %s\ndaemon logs (run directory %s):\n%s", l.bgpSummary(), dir, l.procs.logs())
		}
		r.say("cleaning up: stopping daemons, removing namespaces")
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
		if o.Inventory != nil {
			o.Inventory(l.Inventory())
		}
	}()
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	res, err = r.play(ctx)
	if err != nil {
		return nil, err
	}
	res.Paper = paper
	return res, nil
}

// runner plays one scenario on one lab.
type runner struct {
	p     Params
	sc    *Scenario
	lab   *Lab
	out   io.Writer
	load  *Load
	flood *Flood
	start time.Time
	// failed names the servers fail-server stopped: their connections die
	// with them, whatever the load balancer does.
	failed []string
	// heirs: what remove-heir found and did (heir.go).
	heirs *HeirReport
}

func (r *runner) say(format string, a ...any) {
	if r.out == nil {
		return
	}
	if isTerminal(r.out) {
		fmt.Fprint(r.out, "\r\033[K") // over the progress line
	}
	fmt.Fprintf(r.out, "%s  "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// setUp creates the instance, starts the initial servers and muxes, and
// checks every client reaches the VIP before the load starts.
func (r *runner) setUp(ctx context.Context) error {
	l := r.lab
	if err := l.CreateInstance(); err != nil {
		return err
	}
	for _, i := range r.sc.InitialServers {
		if err := l.AddServer(i); err != nil {
			return err
		}
	}
	if r.sc.BindVIP {
		if err := l.checkVIPOnly(r.sc.InitialServers[0]); err != nil {
			return err
		}
	}
	for _, i := range r.sc.InitialMuxes {
		if err := l.StartMux(ctx, i); err != nil {
			return err
		}
	}
	r.say("BGP converged: the router spreads %v over muxes %v", l.vip(), l.runningMuxes())
	return l.checkReachable(ctx, time.Duration(r.p.Stall))
}

// play runs the load and the events, then counts.
func (r *runner) play(ctx context.Context) (*Result, error) {
	l := r.lab
	r.say("load: %d clients × %d %s %sconnections downloading %s files",
		r.p.Clients, r.p.PerClient, map[bool]string{true: "persistent", false: "short-lived"}[r.p.Persistent],
		map[bool]string{true: "MPTCP ", false: ""}[r.p.MPTCP], humanBytes(r.p.FileSize))
	if r.sc.Idle.PerClient > 0 {
		r.say("      + %d idle connections per client, one small request every ~%v", r.sc.Idle.PerClient, r.sc.Idle.Every)
	}
	if r.p.UDPFlows > 0 {
		r.say("      + %d long-lived UDP flows per client to %v:%d (servers answer from a socket connected to the client)", r.p.UDPFlows, VIP, UDPPort)
	}
	if r.p.QUICFlows > 0 {
		r.say("      + %d QUIC connections per client to %v:%d (routed by connection id), each migrating to a new source port once", r.p.QUICFlows, VIP, QUICPort)
	}
	r.load = l.StartLoad(LoadOptions{PerClient: r.p.PerClient, FileSize: r.p.FileSize, Persistent: r.p.Persistent,
		MPTCP: r.p.MPTCP, Stall: time.Duration(r.p.Stall), Seed: r.p.Seed, Idle: r.sc.Idle, UDPFlows: r.p.UDPFlows, QUICFlows: r.p.QUICFlows})
	r.start = r.load.started
	samples := newSampler(r)
	defer func() {
		if r.flood != nil {
			r.flood.Stop()
		}
	}()
	var log []EventLog
	events := r.sc.Events
	for i := 0; i < len(events); i++ {
		// Servers removed at the same moment go in one request, so the
		// controller rebalances once (pkg/controlplane/controller RemoveDIPs).
		batch := events[i : i+1]
		for events[i].Action == "remove-server" && i+1 < len(events) &&
			events[i+1].Action == "remove-server" && events[i+1].At == events[i].At {
			i++
			batch = events[i-len(batch) : i+1]
		}
		e := batch[0]
		if err := sleepUntil(ctx, r.start.Add(e.At)); err != nil {
			r.load.Abort()
			samples.stop()
			return nil, err
		}
		t0 := time.Now()
		var err error
		if len(batch) > 1 {
			ids := make([]int, len(batch))
			for j, b := range batch {
				ids[j] = b.Args[0]
			}
			err = l.RemoveServers(ids...)
		} else {
			err = r.apply(ctx, e)
		}
		for _, e := range batch {
			entry := EventLog{At: Duration(time.Since(r.start).Round(100 * time.Millisecond)), Event: e.String(),
				Took: Duration(time.Since(t0).Round(10 * time.Millisecond))}
			log = append(log, entry)
			if err != nil {
				r.load.Abort()
				samples.stop()
				return nil, fmt.Errorf("event %q at %v: %w", e, e.At, err)
			}
			r.say("%6s  %s (took %v)", time.Duration(entry.At), e, time.Duration(entry.Took))
		}
	}
	drain := time.Duration(r.p.Stall) + 10*time.Second
	lr := r.load.Stop(drain)
	timeline := samples.stop()
	res := r.result(lr, timeline, log)
	return res, nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(t)):
		return nil
	}
}

// apply performs one event.
func (r *runner) apply(ctx context.Context, e Event) error {
	l := r.lab
	switch e.Action {
	case "add-server":
		return l.AddServer(e.Args[0])
	case "remove-server":
		return l.RemoveServer(e.Args[0])
	case "remove-heir":
		return r.removeHeir(e.Args[0])
	case "fail-server":
		r.failed = append(r.failed, fmt.Sprintf("srv%d", e.Args[0]))
		return l.FailServer(e.Args[0])
	case "set-weight":
		return l.SetWeight(e.Args[0], e.Args[1])
	case "fail-health":
		return l.FailHealth(e.Args[0])
	case "restore-health":
		return l.RestoreHealth(e.Args[0])
	case "add-mux":
		return l.StartMux(ctx, e.Args[0])
	case "remove-mux":
		return l.RemoveMux(ctx, e.Args[0])
	case "kill-mux":
		return l.KillMux(ctx, e.Args[0])
	case "flood-start":
		if r.flood != nil {
			return errors.New("a flood is already running")
		}
		if l.v6() {
			return errors.New("flood-start: the SYN flood sends IPv4 SYNs (synflood.go); it cannot flood an IPv6 lab's VIP")
		}
		f, err := StartFlood(l.clients[len(l.clients)-1], netipAddrPort80(), SpoofPrefix, e.Args[0], r.sc.Duration()-e.At+time.Second, r.p.Seed)
		r.flood = f
		return err
	case "flood-stop":
		if r.flood == nil {
			return errors.New("no flood is running")
		}
		r.flood.Stop()
		return nil
	case "rotate-key":
		return l.RotateKey(e.Args[0])
	case "apply":
		return l.ApplyServers(e.Args...)
	case "end":
		return nil
	}
	return fmt.Errorf("unknown action %q", e.Action)
}

// EventLog is an event as it happened.
type EventLog struct {
	At    Duration `json:"at"`
	Event string   `json:"event"`
	Took  Duration `json:"took"`
}
