package controller

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// The controller as its strategies' hooks see it (ctlstrategy.Ctl) and an
// instance as they see it (ctlstrategy.Instance): the strategies' packages
// never reach the controller's own types.

// ctl is the controller for strategy name's hooks.
type ctl struct {
	c    *Controller
	name forwarding.Strategy
}

// Ctl is the controller as strategy name's hooks see it: what a
// strategy's tests drive the strategy's loop work with.
func (c *Controller) Ctl(name forwarding.Strategy) ctlstrategy.Ctl { return ctl{c, name} }

func (x ctl) Now() time.Time       { return x.c.now() }
func (x ctl) Logger() *slog.Logger { return x.c.log }
func (x ctl) Options() any         { return x.c.opts.Strategies[x.name] }
func (x ctl) Metrics() any         { return x.c.metrics.strategy(x.name) }

// State is made once per controller, on first use (ctlstrategy.StateMaker).
func (x ctl) State() any {
	if st, ok := x.c.strategyState[x.name]; ok {
		return st
	}
	s, ok := ctlstrategy.Lookup(x.name)
	if !ok {
		return nil
	}
	m, ok := s.(ctlstrategy.StateMaker)
	if !ok {
		return nil
	}
	st := m.NewState()
	x.c.strategyState[x.name] = st
	return st
}

// Instances: the store's listing and the instances cached since.
func (x ctl) Instances(ctx context.Context) ([]string, error) {
	names, err := x.c.Instances(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for n := range x.c.cache {
		if !seen[n] {
			names = append(names, n)
		}
	}
	return names, nil
}

func (x ctl) Loaded() []string {
	out := make([]string, 0, len(x.c.cache))
	for n := range x.c.cache {
		out = append(out, n)
	}
	return out
}

func (x ctl) Load(ctx context.Context, name string) (ctlstrategy.Instance, error) {
	in, err := x.c.load(ctx, name)
	if err != nil {
		return nil, err
	}
	return inst{x.c, in}, nil
}

func (x ctl) Reconcile(ctx context.Context, name string) error { return x.c.Reconcile(ctx, name) }

// inst is one loaded instance for a strategy's hooks.
type inst struct {
	c  *Controller
	in *instance
}

func (i inst) Config() *forwarding.Instance { return i.in.config }
func (i inst) Table() *forwarding.Table     { return i.in.w.Table() }
func (i inst) Logger() *slog.Logger         { return i.in.log }

func (i inst) DIPs() map[forwarding.ServerID]ctlstrategy.Server {
	out := make(map[forwarding.ServerID]ctlstrategy.Server, len(i.in.dips))
	for id, d := range i.in.dips {
		out[id] = ctlstrategy.Server{Addr: d.Addr, Active: d.State == Active, EffectiveWeight: d.EffectiveWeight()}
	}
	return out
}

func (i inst) Publish(ctx context.Context, d *forwarding.Delta) error {
	if _, err := i.in.w.Publish(ctx, d); err != nil {
		return err
	}
	i.c.published(i.in)
	return nil
}

// WriteConfig stores cfg as the instance record; on failure the instance
// keeps its old one.
func (i inst) WriteConfig(ctx context.Context, cfg *forwarding.Instance) error {
	b, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := i.c.commit(ctx, i.in, store.Put(i.in.k.Config(), b)); err != nil {
		return err
	}
	i.in.config = cfg
	return nil
}
