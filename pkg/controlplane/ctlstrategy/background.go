package ctlstrategy

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Background is a strategy with work of its own beside the elected
// controller's loop (AWFD: capacity polls and class records). The leader
// starts it once per term; it returns when ctx ends or at the first
// store.ErrConflict (the leadership is gone).
type Background interface {
	RunBackground(ctx context.Context, h Host) error
}

// Host is what the controller gives a strategy's background work.
type Host interface {
	// Store is the leadership's fenced store: a write after the
	// leadership is lost fails with store.ErrConflict.
	Store() store.Store
	// Root is the store prefix of the deployment (ring.InstanceKeys).
	Root() string
	Logger() *slog.Logger
	Now() time.Time
	// Instances are the names of the instances under Root.
	Instances(ctx context.Context) ([]string, error)
	// Servers are an instance's DIPs as the store holds them.
	Servers(ctx context.Context, k ring.Keys) (map[forwarding.ServerID]Server, error)
	// Agents asks the servers' agents (mutual TLS in production).
	Agents() CapacityAsker
	// Metrics is what the strategy's NewMetrics made for this
	// controller's metrics (MetricsMaker), or nil: none.
	Metrics() any
	// Options are the strategy's controller options
	// (controller.Options.Strategies), nil if none were given.
	Options() any
	// Do runs f on the controller's loop, between its other operations,
	// and returns f's error; what names the work in the loop's log. It
	// fails when ctx ends first or when there is no loop (a host made
	// outside controller.Run).
	Do(ctx context.Context, what string, f func(ctx context.Context, c Ctl) error) error
}

// Server is one DIP as background work sees it.
type Server struct {
	Addr netip.Addr
	// Active: in the pool (not being removed or drained away).
	Active bool
	// EffectiveWeight is the weight new connections are shared by (0 when
	// down, pending or drained).
	EffectiveWeight uint32
}

// CapacityAsker asks one agent for its capacity (agentapi.Client; tests
// give a fake).
type CapacityAsker interface {
	Capacity(ctx context.Context, agent netip.AddrPort) (*agentapi.CapacityReport, error)
}

// MetricsMaker is a strategy with metrics of its own: the controller's
// NewMetrics calls it once with its registerer and hands the result to the
// strategy's background work (Host.Metrics).
type MetricsMaker interface {
	NewMetrics(reg prometheus.Registerer) any
}

// ShowReader is a strategy whose part of `ctl show` reads more of the
// store (Strategy.Show then prints it).
type ShowReader interface {
	ReadShow(ctx context.Context, st store.Store, k ring.Keys, v *View, now time.Time) error
}

// All is every registered strategy, for the controller's loops over their
// optional capabilities (background work, metrics).
func All() []Strategy {
	names := registry.Names()
	out := make([]Strategy, 0, len(names))
	for _, name := range names {
		s, _ := registry.Lookup(name)
		out = append(out, s)
	}
	return out
}
