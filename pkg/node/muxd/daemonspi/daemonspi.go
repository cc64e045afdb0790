// Package daemonspi is the mux daemon's strategy interface: what
// pkg/node/muxd does for a strategy's instances besides following their
// ring, and the registry a strategy's own package (pkg/strategy/NAME) adds
// itself to in init(). A strategy that needs nothing more registers
// nothing.
//
// It imports no layer: a strategy package imports it, never muxd, so the
// daemon's own tests can load every strategy (pkg/strategy/all) without
// an import cycle.
package daemonspi

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/prometheus/client_golang/prometheus"
)

// Strategy is the mux daemon's side of a strategy: a Follower, a Server,
// a MetricsMaker, or several of them.
type Strategy any

// Follower is a strategy that reads something per instance from the store
// outside the ring.
type Follower interface {
	// Follow keeps what an instance reads from the store outside the ring
	// loaded (AWFD's class record) until ctx ends or the daemon stops.
	Follow(ctx context.Context, h Host, st store.Store, k ring.Keys, name string, log *slog.Logger)
}

// Server is a strategy with state of its own in the daemon that the node
// API and the metrics read (Prism's keep-alive bits): made once per daemon
// with its host.
type Server interface {
	Serve(h Host) Service
}

// Service is what a Server offers: handlers the daemon mounts on the mux
// node API (which admits only the controller role), by pattern such as
// "POST /v1/prism/keepalive", and a collector for the daemon's metrics
// (nil: none).
type Service struct {
	Routes    map[string]http.HandlerFunc
	Collector prometheus.Collector
}

// MetricsMaker is a strategy with metrics of its own in the daemon: made
// once with the daemon's registerer, handed back by Host.Metrics.
type MetricsMaker interface {
	NewMetrics(reg prometheus.Registerer) any
}

// Host is what the daemon gives a strategy.
type Host interface {
	// Stopping is closed when the daemon stops (Close, or an upgrade's
	// Abandon): watches end.
	Stopping() <-chan struct{}
	// WithInstance runs f on a loaded instance's strategy state in the
	// data plane, under the mux's lock (muxspi.WithInstance).
	WithInstance(name string, f func(h muxspi.MuxHost, slot, generation uint32, st muxspi.InstanceState) error) error
	// Instances are the names of this strategy's instances loaded in the
	// data plane.
	Instances() []string
	// Metrics is what the strategy's NewMetrics made, or nil: none.
	Metrics() any
}

// registry holds each strategy's mux daemon side.
var registry = forwarding.NewRegistry[Strategy]("daemonspi")

// Register adds name's daemon side; a strategy package calls it from init().
func Register(name forwarding.Strategy, s Strategy) { registry.Register(name, s) }

// Lookup is the registered daemon side of name.
func Lookup(name forwarding.Strategy) (Strategy, bool) { return registry.Lookup(name) }

// Each calls f for every registered daemon side, in name order.
func Each(f func(name forwarding.Strategy, s Strategy)) {
	for _, name := range registry.Names() {
		s, _ := registry.Lookup(name)
		f(name, s)
	}
}
