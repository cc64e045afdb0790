package awfd

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/muxd/daemonspi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/prometheus/client_golang/prometheus"
)

// AWFD class records (issue 14): an AWFD instance's mux watches the one key
// beside the ring where the controller writes the class record, and loads
// each new record into the data plane. Lost updates are harmless by
// design: the mux dispatches by the last record it loaded, which stays
// valid however old it is (the closed loop corrects the classes at the
// next record it receives); a broken or hostile record is refused and the
// last good one kept; an older sequence (a delayed write) is refused.

// daemon is the mux daemon's side of AWFD: the class record follower.
type daemon struct{}

func init() { daemonspi.Register(forwarding.StrategyAWFD, daemon{}) }

// daemonMetrics count what the record follower does.
type daemonMetrics struct {
	records *prometheus.CounterVec // by result
	age     *prometheus.GaugeVec
	servers *prometheus.GaugeVec // per class
}

// NewMetrics registers the follower's metrics with the daemon's registerer.
func (daemon) NewMetrics(reg prometheus.Registerer) any {
	m := &daemonMetrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_mux_awfd_records_total",
			Help: "AWFD class records seen, by result: loaded, refused_old (sequence below the running one), invalid (kept the last good one), failed (data plane)."},
			[]string{"lb_instance", "result"}),
		age: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_mux_awfd_record_age_seconds",
			Help: "Age of the AWFD class record this mux dispatches by, from the controller's timestamp (set when a record loads)."}, []string{"lb_instance"}),
		servers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_mux_awfd_class_servers",
			Help: "Servers in each AWFD class of the loaded record (class 0: idle, gets no new connection)."}, []string{"lb_instance", "class"}),
	}
	reg.MustRegister(m.records, m.age, m.servers)
	return m
}

func (m *daemonMetrics) count(name, result string) {
	if m != nil {
		m.records.WithLabelValues(name, result).Inc()
	}
}

// Follow keeps an AWFD instance's class record loaded until ctx ends.
// Besides watch events it re-reads every second: a record that arrived
// before the instance's table was loaded is applied then.
func (daemon) Follow(ctx context.Context, h daemonspi.Host, st store.Store, k ring.Keys, name string, log *slog.Logger) {
	m, _ := h.Metrics().(*daemonMetrics)
	bell := st.Watch(ctx, classes.Key(k))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastSeq uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.Stopping():
			return
		case _, ok := <-bell:
			if !ok {
				return
			}
		case <-tick.C:
		}
		it, err := st.Get(ctx, classes.Key(k))
		if errors.Is(err, store.ErrNotFound) {
			continue // no record yet: the Maglev table dispatches
		}
		if err != nil {
			continue // store outage: keep the last record (health.go reports the outage)
		}
		rec, err := classes.Decode(it.Value)
		if err != nil {
			m.count(name, "invalid")
			log.Warn("awfd record refused, keeping the last good one", "instance", name, "error", err)
			continue
		}
		if rec.Seq == lastSeq {
			continue
		}
		if err := SetRecord(h.WithInstance, name, rec); err != nil {
			if errors.Is(err, ErrOldRecord) { // a delayed write
				m.count(name, "refused_old")
				lastSeq = rec.Seq
			} else {
				m.count(name, "failed")
			}
			continue
		}
		lastSeq = rec.Seq
		m.count(name, "loaded")
		if m != nil {
			m.age.WithLabelValues(name).Set(time.Since(time.UnixMilli(rec.AtMillis)).Seconds())
			m.servers.WithLabelValues(name, "0").Set(float64(len(rec.Idle)))
			for c, members := range rec.Classes {
				m.servers.WithLabelValues(name, strconv.Itoa(c+1)).Set(float64(len(members)))
			}
		}
	}
}
