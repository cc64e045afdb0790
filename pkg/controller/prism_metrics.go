package controller

import "github.com/prometheus/client_golang/prometheus"

// prismMetrics are the Prism strategy's controller figures.
type prismMetrics struct {
	mct      *prometheus.GaugeVec
	migrated *prometheus.CounterVec
	rounds   *prometheus.GaugeVec
	pruned   *prometheus.CounterVec
}

func newPrismMetrics(reg prometheus.Registerer) *prismMetrics {
	l := []string{"lb_instance"}
	p := &prismMetrics{
		mct: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_prism_mct_entries",
			Help: "Entries of the Prism migrated-connection table as published."}, l),
		migrated: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_prism_migrated_total",
			Help: "Signatures copied into the MCT by Algorithm 1 (late: by the final round after a flip)."}, []string{"lb_instance", "when"}),
		rounds: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_prism_last_rounds",
			Help: "Rounds Algorithm 1 ran in the last pool update."}, l),
		pruned: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_prism_pruned_total",
			Help: "MCT entries removed because no live connection has them any more."}, l),
	}
	reg.MustRegister(p.mct, p.migrated, p.rounds, p.pruned)
	return p
}

// observePrism records one publication of a Prism instance: the MCT size
// after it, and what the update migrated and pruned.
func (m *Metrics) observePrism(instance string, mct, migrated, late, rounds, pruned int) {
	if m == nil || m.prism == nil {
		return
	}
	m.prism.mct.WithLabelValues(instance).Set(float64(mct))
	m.prism.migrated.WithLabelValues(instance, "rounds").Add(float64(migrated))
	m.prism.migrated.WithLabelValues(instance, "late").Add(float64(late))
	if rounds > 0 {
		m.prism.rounds.WithLabelValues(instance).Set(float64(rounds))
	}
	m.prism.pruned.WithLabelValues(instance).Add(float64(pruned))
}
