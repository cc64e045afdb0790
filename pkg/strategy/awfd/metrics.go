package awfd

import (
	"strconv"

	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/prometheus/client_golang/prometheus"
)

// metrics: what the capacity poller saw (poller.go).
type metrics struct {
	classes  *prometheus.GaugeVec   // servers per class of the latest record
	failures *prometheus.CounterVec // capacity polls that failed
	writes   *prometheus.CounterVec // records written
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		classes: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_awfd_class_servers",
			Help: "Servers in each AWFD class of the latest record (class 0: no new connections)."}, []string{"lb_instance", "class"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_awfd_poll_failures_total",
			Help: "Capacity polls of AWFD servers that failed (the server's last value is kept for the hold, then decays)."}, []string{"lb_instance"}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_awfd_records_total",
			Help: "AWFD class records written (classes changed, or the heartbeat)."}, []string{"lb_instance"}),
	}
	reg.MustRegister(m.classes, m.failures, m.writes)
	return m
}

func (m *metrics) failed(instance string) {
	if m != nil {
		m.failures.WithLabelValues(instance).Inc()
	}
}

func (m *metrics) written(instance string, r *classes.Record) {
	if m == nil {
		return
	}
	m.writes.WithLabelValues(instance).Inc()
	m.classes.WithLabelValues(instance, "0").Set(float64(len(r.Idle)))
	for k, c := range r.Classes {
		m.classes.WithLabelValues(instance, strconv.Itoa(k+1)).Set(float64(len(c)))
	}
}
