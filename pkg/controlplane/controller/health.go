package controller

import (
	"context"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store"
)

// HealthOptions configure DIP health checks. What a probe is, each
// instance says (forwarding.HealthCheck: through the agent by default).
type HealthOptions struct {
	Interval time.Duration // between probes of one DIP (default 2 s)
	Timeout  time.Duration // of one probe (default 1 s)
	Fall     int           // consecutive failures that mark a DIP down (default 3)
	Rise     int           // consecutive successes that mark it up (default 2)
	// Flap damping, in the manner of BGP route-flap damping: every up→down
	// transition adds one to a penalty that halves every HalfLife; while
	// the penalty is above Suppress, a recovered DIP stays down, until the
	// penalty decays below Reuse. Defaults: 5 min, 2.5, 1 (three flaps
	// within a few minutes suppress, as with BGP's 1000/2000/750).
	HalfLife        time.Duration
	Suppress, Reuse float64
	// Probe checks one DIP of an instance; nil runs the instance's
	// configured probe (agent, tcp or http).
	Probe func(ctx context.Context, in *forwarding.Instance, d DIP) error
	// Agents asks the agents for probes of kind agent (nil: plaintext
	// HTTP; the controller gives its mutual-TLS client, nodeauth).
	Agents *agentapi.Client
	// Logger receives every health state change with its reason (a server
	// down at Warn), and, at Error, every round an instance fails open;
	// nil: the controller's.
	Logger *slog.Logger
}

func (o *HealthOptions) fill() {
	if o.Interval == 0 {
		o.Interval = 2 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = time.Second
	}
	if o.Fall == 0 {
		o.Fall = 3
	}
	if o.Rise == 0 {
		o.Rise = 2
	}
	if o.HalfLife == 0 {
		o.HalfLife = 5 * time.Minute
	}
	if o.Suppress == 0 {
		o.Suppress = 2.5
	}
	if o.Reuse == 0 {
		o.Reuse = 1
	}
	if o.Probe == nil {
		p := newProber(o.Timeout)
		if o.Agents != nil {
			p.agents = o.Agents
		}
		o.Probe = p.probe
	}
	o.Logger = loggerOr(o.Logger)
}

// checker probes the DIPs of all instances.
type checker struct {
	opts   HealthOptions
	streak map[string]map[forwarding.ServerID]*streak
}

func newChecker(o HealthOptions) *checker {
	o.fill()
	return &checker{opts: o, streak: map[string]map[forwarding.ServerID]*streak{}}
}

// round probes every DIP of every instance once (in parallel), then
// writes, per instance in one batch, the records whose health changed, and
// rebalances once if a DIP went up, down or out of pending.
func (hc *checker) round(ctx context.Context, c *Controller) error {
	names, err := c.Instances(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := hc.instance(ctx, c, name); err != nil {
			return err
		}
	}
	return nil
}

func (hc *checker) instance(ctx context.Context, c *Controller, name string) error {
	in, err := c.instance(ctx, name)
	if err != nil {
		return err
	}
	if in.config.HealthProbe().Kind == forwarding.HealthNone {
		return nil
	}
	type result struct {
		id  forwarding.ServerID
		err error
	}
	var probes []DIP
	for _, d := range in.dips {
		if d.State != Removing {
			probes = append(probes, *d)
		}
	}
	results := make(chan result, len(probes))
	pctx, cancel := context.WithTimeout(ctx, hc.opts.Timeout)
	defer cancel()
	sem := make(chan struct{}, 64) // bound concurrent probes
	cfg := in.config
	for _, d := range probes {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results <- result{d.ID, hc.opts.Probe(pctx, cfg, d)}
		}()
	}
	st := hc.streak[name]
	if st == nil {
		st = map[forwarding.ServerID]*streak{}
		hc.streak[name] = st
	}
	now := c.now()
	var ops []store.Op
	updated := map[forwarding.ServerID]*DIP{}
	rebalance := false
	for range probes {
		r := <-results
		d := in.dips[r.id]
		if d == nil || d.State == Removing {
			continue
		}
		s := st[r.id]
		if s == nil {
			s = &streak{}
			st[r.id] = s
		}
		nd, what := healthStep(*d, s, r.err, now, &hc.opts)
		if nd == *d {
			continue
		}
		if nd.Down != d.Down || nd.Pending != d.Pending {
			rebalance = true
		}
		if what != "" {
			level := slog.LevelInfo
			if nd.Down {
				level = slog.LevelWarn
			}
			hc.opts.Logger.Log(ctx, level, "server health changed", "instance", name, "server", r.id, "dip", d.Addr,
				"health", healthWord(&nd), "reason", what)
		}
		if healthWord(&nd) != healthWord(d) {
			c.metrics.observeTransition(name, &nd)
		}
		ops = append(ops, putDIP(&nd, in.k))
		updated[r.id] = &nd
	}
	for id := range st {
		if _, ok := in.dips[id]; !ok {
			delete(st, id) // removed: a DIP added again with this id starts over
		}
	}
	for len(ops) > 0 {
		n := min(len(ops), 100)
		if err := c.commit(ctx, in, ops[:n]...); err != nil {
			return err
		}
		ops = ops[n:]
	}
	for id, d := range updated {
		in.dips[id] = d
	}
	if rebalance {
		if err := c.Reconcile(ctx, name); err != nil {
			return err
		}
	}
	if fo := failingOpen(in.dips); fo.active {
		hc.opts.Logger.Error("all servers are down; failing open: buckets stay with their last owners until one comes back",
			"instance", name, "servers_down", fo.down, "reasons", fo.reasons)
	}
	c.metrics.observeHealth(name, in.dips)
	return nil
}

// releasePending takes every DIP out of pending when no health checks
// run (a controller started with them off after one that had them on):
// nothing would ever probe them, and they would own no bucket forever.
func (c *Controller) releasePending(ctx context.Context) error {
	names, err := c.Instances(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		in, err := c.instance(ctx, name)
		if err != nil {
			return err
		}
		for _, id := range sortedKeys(in.dips) {
			if in.dips[id].Pending {
				c.log.Info("server health changed", "instance", name, "server", id, "dip", in.dips[id].Addr,
					"health", "up", "reason", "pending, but health checks are off")
				if err := c.SetHealth(ctx, name, id, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
