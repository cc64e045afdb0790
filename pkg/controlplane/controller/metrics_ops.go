package controller

import "github.com/prometheus/client_golang/prometheus"

// opsMetrics are what an operator watches the controller itself by: is
// this process the leader, what each instance's muxes should hold, the
// ctl requests it ran, and every health transition.
type opsMetrics struct {
	leader      prometheus.Gauge
	generation  *prometheus.GaugeVec
	incarnation *prometheus.GaugeVec
	requests    *prometheus.CounterVec
	transitions *prometheus.CounterVec
}

func newOpsMetrics(reg prometheus.Registerer) *opsMetrics {
	m := &opsMetrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{Name: "beamer_controller_leader",
			Help: "1 while this process is the elected controller."}),
		generation: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_generation",
			Help: "Generation this controller last published for the instance (what the muxes should hold)."}, []string{"lb_instance"}),
		incarnation: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_controller_incarnation",
			Help: "Incarnation (Unix second it began) of the instance's ring this controller last published."}, []string{"lb_instance"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_requests_total",
			Help: "ctl requests run by this controller, by operation and result (done, failed: refused as invalid; retried: store trouble)."}, []string{"op", "result"}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_controller_health_transitions_total",
			Help: "Health transitions of servers, by the health entered (up, down, pending, suppressed)."}, []string{"lb_instance", "health"}),
	}
	reg.MustRegister(m.leader, m.generation, m.incarnation, m.requests, m.transitions)
	return m
}

// observeLeader records whether this process leads.
func (m *Metrics) observeLeader(leading bool) {
	if m == nil {
		return
	}
	v := 0.0
	if leading {
		v = 1
	}
	m.ops.leader.Set(v)
}

// observePublished records the pair just published for an instance.
func (m *Metrics) observePublished(instance string, incarnation, generation uint32) {
	if m == nil {
		return
	}
	m.ops.incarnation.WithLabelValues(instance).Set(float64(incarnation))
	m.ops.generation.WithLabelValues(instance).Set(float64(generation))
}

// observeRequest counts one ctl request run.
func (m *Metrics) observeRequest(op, result string) {
	if m == nil {
		return
	}
	m.ops.requests.WithLabelValues(op, result).Inc()
}

// observeTransition counts a server entering a health state.
func (m *Metrics) observeTransition(instance string, d *DIP) {
	if m == nil {
		return
	}
	m.ops.transitions.WithLabelValues(instance, healthWord(d)).Inc()
}
