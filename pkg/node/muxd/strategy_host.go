package muxd

import (
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/muxd/daemonspi"
	"github.com/prometheus/client_golang/prometheus"
)

// StrategyHost is what the daemon gives the daemon side of strategy name
// (daemonspi.Host) over mux, until stop closes; reg, when not nil,
// receives the strategy's own metrics. The daemon makes one per strategy;
// a strategy's tests make their own.
func StrategyHost(mux *dataplane.Mux, stop <-chan struct{}, reg prometheus.Registerer, name forwarding.Strategy) daemonspi.Host {
	h := &strategyHost{mux: mux, stop: stop, name: name}
	if s, ok := daemonspi.Lookup(name); ok && reg != nil {
		if mm, ok := s.(daemonspi.MetricsMaker); ok {
			h.metrics = mm.NewMetrics(reg)
		}
	}
	return h
}

type strategyHost struct {
	mux     *dataplane.Mux
	name    forwarding.Strategy
	stop    <-chan struct{}
	metrics any
}

func (h *strategyHost) Stopping() <-chan struct{} { return h.stop }
func (h *strategyHost) Metrics() any              { return h.metrics }

func (h *strategyHost) WithInstance(name string, f func(muxspi.MuxHost, uint32, uint32, muxspi.InstanceState) error) error {
	return h.mux.WithInstance(name, f)
}

func (h *strategyHost) Instances() []string { return h.mux.InstanceNames(h.name) }

// strategyHost is the daemon's host of name's daemon side: with its
// metrics when the daemon serves metrics, else without.
func (d *Daemon) strategyHost(name forwarding.Strategy) daemonspi.Host {
	d.mu.Lock()
	defer d.mu.Unlock()
	if h, ok := d.strategyHosts[name]; ok {
		return h
	}
	return StrategyHost(d.mux, d.stop, nil, name)
}

// makeStrategyHosts makes the daemon's host of every registered daemon
// side, registering their metrics with reg.
func (d *Daemon) makeStrategyHosts(reg prometheus.Registerer) {
	hosts := map[forwarding.Strategy]daemonspi.Host{}
	var services []daemonspi.Service
	daemonspi.Each(func(name forwarding.Strategy, s daemonspi.Strategy) {
		hosts[name] = StrategyHost(d.mux, d.stop, reg, name)
		if sv, ok := s.(daemonspi.Server); ok {
			services = append(services, sv.Serve(hosts[name]))
		}
	})
	d.mu.Lock()
	d.strategyHosts = hosts
	d.services = services
	d.mu.Unlock()
}
