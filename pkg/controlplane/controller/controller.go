package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// Options tune a Controller.
type Options struct {
	Ring ring.WriterOptions
	// Now is the wall clock (tests move it to expire chaining windows);
	// it also dates new incarnations. Unset, it is the host's clock with
	// its steps ignored (clock.go).
	Now func() time.Time
	// Elapsed, if set with Now, is a monotonic clock (time since some
	// start): Now's steps are then ignored as the host clock's are
	// (tests step Now).
	Elapsed func() time.Duration
	// PendingUntilProbed: DIPs added own no bucket until their first
	// successful health probe (set when health checks run).
	PendingUntilProbed bool
	// Metrics, if set, receives the controller's gauges.
	Metrics *Metrics
	// Holds, when set, keeps history entries of servers that still hold
	// connections of a bucket past the chaining window (history.go).
	Holds HoldFunc
	// HoldCounts, when set, says what the agents last reported of a
	// server's connections in a bucket: the controller then keeps the
	// owners that still hold connections in a history that exceeds K, and
	// reports those it cannot keep (history_limit.go).
	HoldCounts HoldCountFunc
	// EvictOldest: when a move leaves more than K owners, the oldest leave
	// even if one known to hold nothing could (the rule before issue 28);
	// evictions of holders are still reported.
	EvictOldest bool
	// Strategies are the strategies' own controller options, by name (the
	// type is the strategy package's, e.g. *prism.ControllerOptions);
	// a strategy reads its own through ctlstrategy.Ctl.Options.
	Strategies map[forwarding.Strategy]any
	// Logger receives what the controller does (Info), refuses or finds
	// degraded (Warn) and fails at (Error), with fields (instance,
	// generation, server, dip, reason, error); nil discards. Children
	// derive per-instance loggers with With("instance", name).
	Logger *slog.Logger
}

// discard is the logger of a component given none.
var discard = slog.New(slog.DiscardHandler)

// loggerOr is l, or discard when l is nil.
func loggerOr(l *slog.Logger) *slog.Logger {
	if l == nil {
		return discard
	}
	return l
}

// Controller runs operations on the instances under one store root. Give
// it a store fenced by the leadership (see Run); it is not safe for
// concurrent use.
type Controller struct {
	st    store.Store
	root  string
	opts  Options
	now   func() time.Time
	log   *slog.Logger
	cache map[string]*instance
	// seen is the pair last published (or found and trusted) per instance;
	// started the instances whose incarnation this controller began;
	// repairs the instances found damaged, with what was found.
	seen    map[string]ring.Pair
	started map[string]bool
	repairs map[string]string
	// metrics is opts.Metrics; its methods do nothing on nil.
	metrics *Metrics
	// last is the writer of the last publication per instance: its table
	// is what muxes run, the best content for a repair.
	last map[string]*ring.Writer
	// strategyState is each strategy's own state in this controller
	// (ctlstrategy.StateMaker), made on first use (ctl_host.go).
	strategyState map[forwarding.Strategy]any
}

// New returns a Controller writing through st under root.
func New(st store.Store, root string, opts Options) *Controller {
	opts.Logger = loggerOr(opts.Logger)
	now := opts.clock()
	if opts.Ring.Now == nil {
		opts.Ring.Now = now
	}
	return &Controller{st: st, root: root, opts: opts, now: now, log: opts.Logger, cache: map[string]*instance{},
		seen: map[string]ring.Pair{}, started: map[string]bool{}, repairs: map[string]string{}, metrics: opts.Metrics,
		last: map[string]*ring.Writer{}, strategyState: map[forwarding.Strategy]any{}}
}

// Errors for bad requests; the message says what exactly is wrong.
var (
	ErrBadRequest = ctlstrategy.ErrBadRequest
	ErrNotFound   = errors.New("not found")
)

func badf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, a...))
}

// Instances lists the instances under the root.
func (c *Controller) Instances(ctx context.Context) ([]string, error) {
	return listInstances(ctx, c.st, c.root)
}

func listInstances(ctx context.Context, st store.Store, root string) ([]string, error) {
	names, err := st.Children(ctx, ring.InstancesKey(root))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if _, err := st.Get(ctx, ring.InstanceKeys(root, n).Config()); err == nil {
			out = append(out, n)
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return out, nil
}

// Recover runs after winning the election, before any new operation: it
// deletes what an interrupted create or delete left behind (a tree with no
// config) and reconciles every instance, rolling interrupted operations
// forward. It goes on past a failing instance and reports all failures.
//
// A Controller lives for one leadership (New after each election): each
// instance begins this leadership's incarnation on its first use, whether
// that is here or earlier (the holds' priming before Recover), and only
// once — a second "first use" would publish a second incarnation, and
// every mux would load its whole table twice per failover.
func (c *Controller) Recover(ctx context.Context) error {
	c.cache = map[string]*instance{}
	names, err := c.st.Children(ctx, ring.InstancesKey(c.root))
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		k := ring.InstanceKeys(c.root, n)
		_, err := c.st.Get(ctx, k.Config())
		switch {
		case errors.Is(err, store.ErrNotFound):
			err = store.DeleteTree(ctx, c.st, k.Instance)
		case err == nil:
			err = c.Reconcile(ctx, n)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// CreateInstance creates an instance with no DIP.
func (c *Controller) CreateInstance(ctx context.Context, in *forwarding.Instance) error {
	if err := CheckInstance(in); err != nil {
		return fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	if err := c.checkNewInstance(ctx, in); err != nil {
		return err
	}
	k := ring.InstanceKeys(c.root, in.Name)
	w, err := ring.Create(ctx, c.st, k, in, c.opts.Ring)
	if err != nil {
		if errors.Is(err, ring.ErrExists) {
			return badf("instance %q already exists", in.Name)
		}
		return err
	}
	// Created in this leadership: its first incarnation is ours.
	c.started[in.Name], c.seen[in.Name], c.last[in.Name] = true, w.Pair(), w
	return nil
}

// DeleteInstance deletes an instance and everything under it.
func (c *Controller) DeleteInstance(ctx context.Context, name string) error {
	delete(c.cache, name)
	delete(c.started, name)
	delete(c.repairs, name)
	delete(c.last, name)
	err := ring.Delete(ctx, c.st, ring.InstanceKeys(c.root, name))
	if errors.Is(err, ring.ErrNoInstance) {
		return fmt.Errorf("%w: instance %q", ErrNotFound, name)
	}
	return err
}

func (c *Controller) instance(ctx context.Context, name string) (*instance, error) {
	in, err := c.load(ctx, name)
	if errors.Is(err, ring.ErrNoInstance) {
		return nil, fmt.Errorf("%w: instance %q", ErrNotFound, name)
	}
	return in, err
}
