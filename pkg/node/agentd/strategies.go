package agentd

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/dataplane/agentspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/metrics"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/node/agentd/agentdspi"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/prometheus/client_golang/prometheus"
)

// The daemon knows strategies only through agentdspi (and the program's
// through agentspi): each strategy's package (pkg/strategy/NAME) registers
// its side there (Cheetah: keys at start and from the controller's
// pushes, the cookie writer on egress).

// strategyHost is the daemon as its strategies see it (agentdspi.Host).
type strategyHost struct{ d *Daemon }

func (h strategyHost) Agent() agentspi.AgentHost { return h.d.agent }
func (h strategyHost) Config() config.Agent      { return h.d.cfg }

// startStrategies starts every built-in strategy's side of the daemon;
// what each started is released by release (closeStrategies), also when
// a later start fails.
func (d *Daemon) startStrategies() error {
	return agentdspi.Each(func(name forwarding.Strategy, s agentdspi.Strategy) error {
		svc, err := s.Start(strategyHost{d})
		d.services = append(d.services, svc)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
}

// strategyRoutes are the started strategies' paths on the agent API.
func (d *Daemon) strategyRoutes() map[string]agentapi.Route {
	out := map[string]agentapi.Route{}
	for _, svc := range d.services {
		for pattern, r := range svc.Routes {
			out[pattern] = r
		}
	}
	return out
}

// registerStrategyMetrics exports the strategies' counters in the agent
// program (agentspi.Counted) and their collectors.
func (d *Daemon) registerStrategyMetrics(reg prometheus.Registerer) {
	for _, c := range d.agent.StrategyCounters() {
		reg.MustRegister(metrics.NewCounterCollector(c.Metric, c.Help, "decision", c.Read))
	}
	for _, svc := range d.services {
		if svc.Collector != nil {
			reg.MustRegister(svc.Collector)
		}
	}
}

// closeStrategies releases what the strategies hold (their pins stay).
func (d *Daemon) closeStrategies() {
	for _, svc := range d.services {
		if svc.Close != nil {
			svc.Close()
		}
	}
	d.services = nil
}
