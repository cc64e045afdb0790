// Package agentdspi is the server agent daemon's strategy interface: what
// pkg/node/agentd does for a strategy once the agent program is loaded —
// a startup hook, paths of its own on the agent API, metrics — and the
// registry a strategy's own package (pkg/strategy/NAME) adds itself to in
// init(). A strategy that needs nothing more registers nothing; its
// counters in the agent program are exported from agentspi.Counted.
//
// It imports no layer: a strategy package imports it, never agentd, so
// the daemon's own tests can load every strategy (pkg/strategy/all)
// without an import cycle.
package agentdspi

import (
	"github.com/beamer-lb/beamer/pkg/dataplane/agentspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/prometheus/client_golang/prometheus"
)

// Strategy is the agent daemon's side of a strategy.
type Strategy interface {
	// Start runs on every start of the daemon, whatever VIPs it serves,
	// after the agent program is loaded and attached and before the agent
	// API serves: it takes over or drops what a predecessor left of the
	// strategy (pinned state, pinned links). An error fails the start.
	Start(h Host) (Service, error)
}

// Host is what the daemon gives a strategy.
type Host interface {
	// Agent is the loaded agent program.
	Agent() agentspi.AgentHost
	// Config is the agent's configuration (validated, defaults applied).
	Config() config.Agent
}

// Service is what a started strategy offers: handlers the daemon mounts
// on the agent API (which admits only the controller role), by pattern
// such as "PUT /v1/cheetah"; a collector for the daemon's metrics (nil:
// none); Close, called when the daemon stops or hands over to the next
// agent, releases its descriptors (nil: nothing to release). Pinned
// links stay: a stopped agent's programs keep running.
type Service struct {
	Routes    map[string]agentapi.Route
	Collector prometheus.Collector
	Close     func()
}

// registry holds each strategy's agent daemon side.
var registry = forwarding.NewRegistry[Strategy]("agentdspi")

// Register adds name's agent daemon side; a strategy package calls it
// from init().
func Register(name forwarding.Strategy, s Strategy) { registry.Register(name, s) }

// Lookup is the registered agent daemon side of name.
func Lookup(name forwarding.Strategy) (Strategy, bool) { return registry.Lookup(name) }

// Each calls f for every registered agent daemon side, in name order,
// until f fails.
func Each(f func(name forwarding.Strategy, s Strategy) error) error {
	for _, name := range registry.Names() {
		s, _ := registry.Lookup(name)
		if err := f(name, s); err != nil {
			return err
		}
	}
	return nil
}
