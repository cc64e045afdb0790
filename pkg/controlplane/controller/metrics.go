package controller

import (
	"strconv"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the controller's gauges. A nil *Metrics records nothing.
type Metrics struct {
	failOpen *prometheus.GaugeVec
	servers  *prometheus.GaugeVec
	held     *prometheus.GaugeVec
	// The K limit (history_limit.go).
	cuts, evictions, evictedConns *prometheus.CounterVec
	ops                           *opsMetrics
	// strategies are the metrics of strategies with their own
	// (ctlstrategy.MetricsMaker), by name.
	strategies map[forwarding.Strategy]any
}

// NewMetrics registers the controller's gauges with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		failOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_fail_open",
			Help: "1 while every server of the instance is down and it keeps its last owners (fails open)."}, []string{"lb_instance"}),
		servers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_servers",
			Help: "Servers of the instance by health: up, down, pending (not yet probed successfully), suppressed (down, flapping)."}, []string{"lb_instance", "health"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_buckets_held",
			Help: "Buckets whose history keeps a previous owner past the chaining window, by reason."}, []string{"lb_instance", "reason"}),
	}
	m.cuts = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_history_cuts_total",
		Help: "History entries a move pushed out because the history already named max_chain owners, by what the entry held: idle (known to hold nothing), holder (its connections there break), unknown (no recent agent report)."}, []string{"lb_instance", "held"})
	m.evictions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_history_evictions_total",
		Help: "Buckets whose history lost a server that still held connections there (the max_chain limit), per server."}, []string{"lb_instance", "server"})
	m.evictedConns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_history_evicted_connections_total",
		Help: "Connections the servers pushed out of bucket histories by the max_chain limit held there (as their agents last reported): they break."}, []string{"lb_instance", "server"})
	reg.MustRegister(m.failOpen, m.servers, m.held, m.cuts, m.evictions, m.evictedConns)
	m.strategies = map[forwarding.Strategy]any{}
	for _, s := range ctlstrategy.All() {
		if mm, ok := s.(ctlstrategy.MetricsMaker); ok {
			m.strategies[s.Name()] = mm.NewMetrics(reg)
		}
	}
	m.ops = newOpsMetrics(reg)
	return m
}

// strategy is the metrics strategy name made for itself, or nil.
func (m *Metrics) strategy(name forwarding.Strategy) any {
	if m == nil {
		return nil
	}
	return m.strategies[name]
}

func (m *Metrics) observeHealth(instance string, dips map[forwarding.ServerID]*DIP) {
	if m == nil {
		return
	}
	n := map[string]int{"up": 0, "down": 0, "pending": 0, "suppressed": 0}
	for _, d := range dips {
		n[healthWord(d)]++
	}
	for h, c := range n {
		m.servers.WithLabelValues(instance, h).Set(float64(c))
	}
	fo := 0.0
	if failingOpen(dips).active {
		fo = 1
	}
	m.failOpen.WithLabelValues(instance).Set(fo)
}

// observeHeld sets the held-bucket gauge of one instance.
func (m *Metrics) observeHeld(instance string, byReason map[string]int) {
	if m == nil {
		return
	}
	for r, n := range byReason {
		m.held.WithLabelValues(instance, r).Set(float64(n))
	}
}

// observeHistoryCut counts one history entry pushed out by the K limit.
func (m *Metrics) observeHistoryCut(instance, held string) {
	if m == nil {
		return
	}
	m.cuts.WithLabelValues(instance, held).Inc()
}

// observeEviction counts a server's evictions, while it held connections,
// from the histories of buckets buckets.
func (m *Metrics) observeEviction(instance string, id forwarding.ServerID, buckets int, conns uint64) {
	if m == nil {
		return
	}
	server := strconv.Itoa(int(id))
	m.evictions.WithLabelValues(instance, server).Add(float64(buckets))
	m.evictedConns.WithLabelValues(instance, server).Add(float64(conns))
}
