package muxd

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd"
	"github.com/prometheus/client_golang/prometheus"
)

// AWFD class records (issue 14): an AWFD instance's mux watches the one key
// beside the ring where the controller writes the class record, and loads
// each new record into the data plane. Lost updates are harmless by
// design: the mux dispatches by the last record it loaded, which stays
// valid however old it is (the closed loop corrects the classes at the
// next record it receives); a broken or hostile record is refused and the
// last good one kept; an older sequence (a delayed write) is refused.

// awfdMetrics count what the record follower does.
type awfdMetrics struct {
	records *prometheus.CounterVec // by result
	age     *prometheus.GaugeVec
	servers *prometheus.GaugeVec // per class
}

func (d *Daemon) registerAWFDMetrics(reg *prometheus.Registry) {
	d.awfdm = awfdMetrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_mux_awfd_records_total",
			Help: "AWFD class records seen, by result: loaded, refused_old (sequence below the running one), invalid (kept the last good one), failed (data plane)."},
			[]string{"lb_instance", "result"}),
		age: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_mux_awfd_record_age_seconds",
			Help: "Age of the AWFD class record this mux dispatches by, from the controller's timestamp (set when a record loads)."}, []string{"lb_instance"}),
		servers: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_mux_awfd_class_servers",
			Help: "Servers in each AWFD class of the loaded record (class 0: idle, gets no new connection)."}, []string{"lb_instance", "class"}),
	}
	reg.MustRegister(d.awfdm.records, d.awfdm.age, d.awfdm.servers)
}

func (d *Daemon) countAWFD(name, result string) {
	if d.awfdm.records != nil {
		d.awfdm.records.WithLabelValues(name, result).Inc()
	}
}

func init() {
	registerDaemonStrategy(forwarding.StrategyAWFD, daemonStrategy{follow: (*Daemon).followAWFD})
}

// followAWFD keeps an AWFD instance's class record loaded until ctx ends.
// Besides watch events it re-reads every second: a record that arrived
// before the instance's table was loaded is applied then.
func (d *Daemon) followAWFD(ctx context.Context, st store.Store, k ring.Keys, name string, log *slog.Logger) {
	bell := st.Watch(ctx, awfd.Key(k))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastSeq uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.stop:
			return
		case _, ok := <-bell:
			if !ok {
				return
			}
		case <-tick.C:
		}
		it, err := st.Get(ctx, awfd.Key(k))
		if errors.Is(err, store.ErrNotFound) {
			continue // no record yet: the Maglev table dispatches
		}
		if err != nil {
			continue // store outage: keep the last record (health.go reports the outage)
		}
		rec, err := awfd.Decode(it.Value)
		if err != nil {
			d.countAWFD(name, "invalid")
			log.Warn("awfd record refused, keeping the last good one", "instance", name, "error", err)
			continue
		}
		if rec.Seq == lastSeq {
			continue
		}
		if err := d.mux.SetAWFDRecord(name, rec); err != nil {
			if errors.Is(err, dataplane.ErrAWFDOld) {
				d.countAWFD(name, "refused_old")
				lastSeq = rec.Seq
			} else {
				d.countAWFD(name, "failed")
			}
			continue
		}
		lastSeq = rec.Seq
		d.countAWFD(name, "loaded")
		if d.awfdm.age != nil {
			d.awfdm.age.WithLabelValues(name).Set(time.Since(time.UnixMilli(rec.AtMillis)).Seconds())
			d.awfdm.servers.WithLabelValues(name, "0").Set(float64(len(rec.Idle)))
			for c, members := range rec.Classes {
				d.awfdm.servers.WithLabelValues(name, itoa(c+1)).Set(float64(len(members)))
			}
		}
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}
