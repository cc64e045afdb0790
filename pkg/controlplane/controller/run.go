package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/httpserver"
	"github.com/beamer-lb/beamer/pkg/store"
)

// RunOptions configure a controller process.
type RunOptions struct {
	Options
	Identity string // shown by `beamer ctl list`; hostname and pid, say
	// Health enables DIP health checks with these options.
	Health *HealthOptions
	// ReconcileEvery: how often every instance is reconciled even without
	// requests, which ends chaining windows of removed DIPs (default 30 s).
	ReconcileEvery time.Duration
	// VerifyEvery: how often every instance's ring is read back in full as
	// a mux would read it, and repaired if it is damaged or differs from
	// what was published (default 10 s).
	VerifyEvery time.Duration
	// Defrag, if set, runs one defragmentation step every DefragEvery on
	// beamer instances above its threshold.
	Defrag      *AutoDefrag
	DefragEvery time.Duration
	// Holds, if set, polls the agents of servers named in bucket histories
	// and keeps those that still hold connections (holds.go).
	Holds *HoldOptions
	// Capacity asks the agents of AWFD instances (nil: plaintext HTTP;
	// the controller gives its mutual-TLS client, nodeauth).
	Capacity CapacityAsker
}

// Run campaigns for the leadership under root and, while leading, serves
// requests, runs health checks and reconciles periodically. When the
// leadership is lost it campaigns again. It returns when ctx ends.
func Run(ctx context.Context, st store.Store, root string, o RunOptions) error {
	if o.ReconcileEvery == 0 {
		o.ReconcileEvery = 30 * time.Second
	}
	if o.VerifyEvery == 0 {
		o.VerifyEvery = 10 * time.Second
	}
	if o.Defrag != nil && o.DefragEvery <= 0 {
		o.DefragEvery = forwarding.DefaultChainWindow // paper: one step per chaining window
	}
	o.Logger = loggerOr(o.Logger)
	// One clock for every leadership of this process: a standby whose
	// wall clock stepped before it was elected counts from before the
	// step too (clock.go).
	o.Options.Now, o.Options.Elapsed = o.Options.clock(), nil
	log := o.Logger.With("identity", o.Identity) // the election's lines
	// Short pauses: after a store outage the controller must be elected
	// again within seconds of the store's return, or ctl requests time out
	// with no controller to take them.
	pause := store.NewBackoff(time.Second, 5*time.Second)
	for ctx.Err() == nil {
		l, err := st.Campaign(ctx, ElectionKey(root), o.Identity)
		if err != nil {
			if ctx.Err() == nil {
				log.Error("campaign for the leadership failed", "error", err)
				pause.Sleep(ctx)
			}
			continue
		}
		pause.Reset()
		log.Info("elected controller")
		o.Options.Metrics.observeLeader(true)
		err = lead(ctx, st, l, root, o)
		o.Options.Metrics.observeLeader(false)
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		l.Resign(rctx)
		cancel()
		if ctx.Err() == nil {
			log.Warn("no longer leading", "reason", err)
			pause.Sleep(ctx)
		}
	}
	return ctx.Err()
}

// lead does the leader's work until the leadership or ctx ends, or a
// write is refused by the fence.
func lead(ctx context.Context, st store.Store, l store.Leadership, root string, o RunOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.Health != nil {
		o.Options.PendingUntilProbed = true
		h := *o.Health
		if h.Logger == nil {
			h.Logger = o.Logger
		}
		o.Health = &h
	}
	var hd *holder
	var holdTick <-chan time.Time
	if o.Holds != nil {
		ho := *o.Holds
		if ho.Logger == nil {
			ho.Logger = o.Logger
		}
		hd = newHolder(ho)
		o.Options.Holds = hd.hold
		o.Options.HoldCounts = hd.count
		t := time.NewTicker(time.Second) // each instance polls at its own interval
		defer t.Stop()
		holdTick = t.C
	}
	c := New(store.Fenced(st, l), root, o.Options)
	// The strategies' own work (AWFD's capacity polls) runs beside the
	// loop.
	// Their work on the loop (Host.Do) comes in on loopWork.
	work := make(chan loopWork)
	runBackgrounds(ctx, store.Fenced(st, l), root, HostOptions{Logger: o.Logger, Metrics: o.Options.Metrics, Agents: o.Capacity,
		Strategies: o.Options.Strategies, Loop: work})
	if hd != nil {
		hd.now = c.now
	}
	fatal := func(err error) bool { return errors.Is(err, store.ErrConflict) && !c.leading(ctx) }
	if hd != nil {
		if err := hd.prime(ctx, c); err != nil {
			if fatal(err) {
				return err
			}
			o.Logger.Error("asking agents for held connections", "error", err)
		}
	}
	if err := c.Recover(ctx); err != nil {
		if fatal(err) {
			return err
		}
		o.Logger.Error("recovery", "error", err)
	}
	if o.Health == nil {
		if err := c.releasePending(ctx); err != nil {
			if fatal(err) {
				return err
			}
			o.Logger.Error("releasing pending DIPs", "error", err)
		}
	}
	bell := st.Watch(ctx, doorbellKey(root))
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	reconcile := time.NewTicker(o.ReconcileEvery)
	defer reconcile.Stop()
	verify := time.NewTicker(o.VerifyEvery)
	defer verify.Stop()
	var hc *checker
	var healthTick <-chan time.Time
	if o.Health != nil {
		hc = newChecker(*o.Health)
		t := time.NewTicker(hc.opts.Interval)
		defer t.Stop()
		healthTick = t.C
	}
	// The strategies' work on the loop (ctlstrategy.Ticker; Cheetah: due
	// key switches and, with the push on, keys to the agents and their
	// loads back), each at its own interval within.
	strategyTick := time.NewTicker(time.Second)
	defer strategyTick.Stop()
	var defragTick <-chan time.Time
	if o.Defrag != nil {
		t := time.NewTicker(o.DefragEvery)
		defer t.Stop()
		defragTick = t.C
	}
	// A store outage fails every round of every kind, each second: one
	// line per kind every 10 s, with the count of those held back.
	lines := httpserver.NewLineLimiter(10 * time.Second)
	for {
		var err error
		var what string
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.Lost():
			return errors.New("leadership lost (session or lease expired)")
		case <-bell:
			what, err = "serving requests", c.serveRequests(ctx)
		case <-poll.C:
			what, err = "serving requests", c.serveRequests(ctx)
		case <-healthTick:
			what, err = "health round", hc.round(ctx, c)
		case <-reconcile.C:
			what, err = "reconcile", c.reconcileAll(ctx)
		case <-verify.C:
			what, err = "ring check", c.checkRings(ctx)
		case <-holdTick:
			what, err = "hold round", hd.round(ctx, c)
		case <-strategyTick.C:
			what, err = "strategy rounds", c.strategyTicks(ctx)
		case w := <-work:
			what, err = w.what, w.f(ctx, c.Ctl(w.name))
			w.done <- err
		case <-defragTick:
			what, err = "defragmentation", c.autoDefrag(ctx, *o.Defrag)
		}
		if err != nil {
			if fatal(err) {
				return err
			}
			lines.Log(o.Logger, slog.LevelError, what, what+" failed", "error", err)
		}
	}
}

func (c *Controller) reconcileAll(ctx context.Context) error {
	names, err := c.Instances(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		if err := c.Reconcile(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// strategyTicks runs the strategies' work on the loop each second
// (ctlstrategy.Ticker).
func (c *Controller) strategyTicks(ctx context.Context) error {
	var errs []error
	for _, s := range ctlstrategy.All() {
		if t, ok := s.(ctlstrategy.Ticker); ok {
			if err := t.Tick(ctx, c.Ctl(s.Name())); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}
