package prism

import (
	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Prism strategy's controller figures; a nil *metrics
// records nothing.
type metrics struct {
	mct      *prometheus.GaugeVec
	migrated *prometheus.CounterVec
	rounds   *prometheus.GaugeVec
	reasons  *prometheus.CounterVec
	rounds2  *prometheus.CounterVec
	muxFails *prometheus.CounterVec
	suspects *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	l := []string{"lb_instance"}
	p := &metrics{
		mct: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_prism_mct_entries",
			Help: "Entries of the Prism migrated-connection table as published."}, l),
		migrated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_prism_migrated_total",
			Help: "Signatures copied into the MCT by Algorithm 1 (late: by the final round after a flip)."}, []string{"lb_instance", "when"}),
		rounds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_prism_last_rounds",
			Help: "Rounds Algorithm 1 ran in the last pool update."}, l),
	}
	// The one count of pruned MCT entries (beamer_controller_prism_pruned_total,
	// which counted the same entries without the reason, is gone: its value
	// is sum without (reason) of this one).
	p.reasons = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_prism_pruned_by_reason_total",
		Help: "MCT entries removed, by why: server_gone (removed or down), closed (idle on every mux, and its server no longer lists the connection), idle_max (idle on every mux past the limit)."}, []string{"lb_instance", "reason"})
	p.rounds2 = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_prism_keepalive_rounds_total",
		Help: "Collections of the muxes' MCT keep-alive bits: complete (every mux answered) or incomplete (the round counts for no entry)."}, []string{"lb_instance", "result"})
	p.muxFails = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_prism_keepalive_mux_failures_total",
		Help: "Muxes that did not answer a keep-alive collection."}, l)
	p.suspects = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_prism_mct_suspects",
		Help: "MCT entries no mux has hit for the idle rounds: their servers are asked whether the connections still live."}, l)
	reg.MustRegister(p.mct, p.migrated, p.rounds, p.reasons, p.rounds2, p.muxFails, p.suspects)
	return p
}

// metricsOf is controller c's Prism metrics, or nil.
func metricsOf(c ctlstrategy.Ctl) *metrics {
	m, _ := c.Metrics().(*metrics)
	return m
}

// observe records one publication of a Prism instance: the MCT size
// after it, and what the update migrated (pruning: observePruned).
func (m *metrics) observe(instance string, mct, migrated, late, rounds int) {
	if m == nil {
		return
	}
	m.mct.WithLabelValues(instance).Set(float64(mct))
	m.migrated.WithLabelValues(instance, "rounds").Add(float64(migrated))
	m.migrated.WithLabelValues(instance, "late").Add(float64(late))
	if rounds > 0 {
		m.rounds.WithLabelValues(instance).Set(float64(rounds))
	}
}

func (m *metrics) observePruned(instance, reason string) {
	if m == nil {
		return
	}
	m.reasons.WithLabelValues(instance, reason).Inc()
}

func (m *metrics) observeKeepAlive(instance string, complete bool, failures, suspects int) {
	if m == nil {
		return
	}
	m.rounds2.WithLabelValues(instance, map[bool]string{true: "complete", false: "incomplete"}[complete]).Inc()
	m.muxFails.WithLabelValues(instance).Add(float64(failures))
	m.suspects.WithLabelValues(instance).Set(float64(suspects))
}
