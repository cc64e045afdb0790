package controller

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store"
)

// CapacityAsker asks one agent for its capacity (agentapi.Client; tests
// give a fake).
type CapacityAsker = ctlstrategy.CapacityAsker

// HostOptions configure what a strategy's background work is given.
type HostOptions struct {
	// Agents asks the agents (nil: plaintext HTTP, agentapi.Client).
	Agents CapacityAsker
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives the work's lines; nil discards.
	Logger *slog.Logger
	// Metrics are the controller's (nil: none); each strategy's own are
	// made with them (ctlstrategy.MetricsMaker).
	Metrics *Metrics
	// Strategies are the strategies' own controller options
	// (Options.Strategies), handed out by Host.Options.
	Strategies map[forwarding.Strategy]any
	// Loop takes work to the controller's loop (Host.Do); nil: none.
	Loop chan<- loopWork
}

// loopWork is background work run on the controller's loop (Host.Do).
type loopWork struct {
	what string
	name forwarding.Strategy
	f    func(ctx context.Context, c ctlstrategy.Ctl) error
	done chan error
}

// NewHost is what the controller gives the background work of strategy
// name (ctlstrategy.Background) over st, the leadership's fenced store,
// under root. The elected controller makes one per strategy and term;
// tests make their own.
func NewHost(st store.Store, root string, name forwarding.Strategy, o HostOptions) ctlstrategy.Host {
	if o.Agents == nil {
		o.Agents = &agentapi.Client{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Logger = loggerOr(o.Logger)
	return &strategyHost{st: st, root: root, name: name, o: o}
}

type strategyHost struct {
	st   store.Store
	root string
	name forwarding.Strategy
	o    HostOptions
}

func (h *strategyHost) Store() store.Store                { return h.st }
func (h *strategyHost) Root() string                      { return h.root }
func (h *strategyHost) Logger() *slog.Logger              { return h.o.Logger }
func (h *strategyHost) Now() time.Time                    { return h.o.Now() }
func (h *strategyHost) Agents() ctlstrategy.CapacityAsker { return h.o.Agents }
func (h *strategyHost) Metrics() any                      { return h.o.Metrics.strategy(h.name) }
func (h *strategyHost) Options() any                      { return h.o.Strategies[h.name] }

func (h *strategyHost) Do(ctx context.Context, what string, f func(context.Context, ctlstrategy.Ctl) error) error {
	if h.o.Loop == nil {
		return fmt.Errorf("%s: no controller loop to run it on", what)
	}
	w := loopWork{what: what, name: h.name, f: f, done: make(chan error, 1)}
	select {
	case h.o.Loop <- w:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *strategyHost) Instances(ctx context.Context) ([]string, error) {
	return listInstances(ctx, h.st, h.root)
}

func (h *strategyHost) Servers(ctx context.Context, k ring.Keys) (map[forwarding.ServerID]ctlstrategy.Server, error) {
	dips, err := readDIPs(ctx, h.st, k)
	if err != nil {
		return nil, err
	}
	out := make(map[forwarding.ServerID]ctlstrategy.Server, len(dips))
	for id, d := range dips {
		out[id] = ctlstrategy.Server{Addr: d.Addr, Active: d.State == Active, EffectiveWeight: d.EffectiveWeight()}
	}
	return out, nil
}

// runBackgrounds starts the background work of every strategy that has
// some, beside the leader's loop until ctx ends: a round of agents
// answering within 80% of a 250 ms interval must not wait behind a
// reconcile.
func runBackgrounds(ctx context.Context, st store.Store, root string, o HostOptions) {
	for _, s := range ctlstrategy.All() {
		if b, ok := s.(ctlstrategy.Background); ok {
			go b.RunBackground(ctx, NewHost(st, root, s.Name(), o))
		}
	}
}
