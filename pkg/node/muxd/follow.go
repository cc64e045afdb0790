package muxd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/muxd/daemonspi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/prometheus/client_golang/prometheus"
)

// applier hands the Follower's generations of one instance to the daemon.
type applier struct {
	d   *Daemon
	cfg forwarding.Instance
}

func (a applier) ApplyDelta(d *forwarding.Delta) error { return a.d.ApplyDelta(a.cfg.Name, d) }
func (a applier) Replace(t *forwarding.Table) error    { return a.d.SetInstance(a.cfg, t) }

// ringMetrics count what the ring followers refuse and reload.
type ringMetrics struct {
	refused     *prometheus.CounterVec
	resyncs     *prometheus.CounterVec
	incarnation *prometheus.GaugeVec
}

func (d *Daemon) registerFollowMetrics(reg *prometheus.Registry) {
	d.ring = ringMetrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_mux_ring_refused_total",
			Help: "Store states older than the one the mux runs (a rollback, a restored backup), refused; each counted once."}, []string{"lb_instance"}),
		resyncs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "beamer_mux_ring_resyncs_total",
			Help: "Whole tables loaded after start (new incarnation, garbage-collected or corrupt delta, failed apply)."}, []string{"lb_instance"}),
		incarnation: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_mux_incarnation",
			Help: "Incarnation of the forwarding state loaded, per instance."}, []string{"lb_instance"}),
	}
	d.servers.gauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_mux_server_unreachable",
		Help: "1 for each server this mux has no route or neighbour for: its buckets are dropped (drop_no_route)."}, []string{"lb_instance", "server"})
	reg.MustRegister(d.ring.refused, d.ring.resyncs, d.ring.incarnation, d.servers.gauge)
}

// loadRetry bounds the pause between attempts to load a ring that cannot
// be loaded at start (damaged, or the store unreachable).
const loadRetry = 5 * time.Second

// Follow loads an instance from the store (latest blob, then the deltas
// after it) and keeps it current in the background until ctx ends. The mux
// only reads the store. An instance without configuration is an error. A
// ring that cannot be loaded yet (damaged, being repaired by the
// controller, store unreachable) is not: Follow logs why and keeps trying
// in the background, so a restarted mux starts. Once loaded, a store
// outage or a corrupt generation leaves the last good state forwarding;
// errors are logged and counted.
func (d *Daemon) Follow(ctx context.Context, st store.Store, root, name string, log *slog.Logger) error {
	k := ring.InstanceKeys(root, name)
	cfg, err := ring.ReadInstance(ctx, st, k)
	if err != nil {
		return fmt.Errorf("instance %q: %w", name, err)
	}
	d.servers.mu.Lock()
	if d.servers.log == nil {
		d.servers.log = log
	}
	d.servers.mu.Unlock()
	f := ring.NewFollower(st, k, ring.FollowerOptions{
		OnError: func(err error) {
			log.Warn("mux ring", "instance", name, "error", err)
			if d.applyErrors != nil {
				d.applyErrors.Inc()
			}
		},
		OnRefuse: func(running, stored ring.Pair) {
			log.Warn("mux ring went back: refused, keeping the newer state (store restored from an older backup, or rolled back?)",
				"instance", name, "running", running.String(), "store", stored.String())
			if d.ring.refused != nil {
				d.ring.refused.WithLabelValues(name).Inc()
			}
		},
		OnResync: func(r ring.Resync) {
			msg := "mux ring: whole table loaded"
			if r.From.Incarnation != r.To.Incarnation {
				msg = "mux ring: new incarnation, loaded whole"
			}
			log.Info(msg, "instance", name, "from", r.From.String(), "to", r.To.String(), "declared_resync", r.Declared, "why", r.Why)
			if d.ring.resyncs != nil {
				d.ring.resyncs.WithLabelValues(name).Inc()
				d.ring.incarnation.WithLabelValues(name).Set(float64(r.To.Incarnation))
			}
		},
	})
	d.health.track(d.stop, st, name, k, f, func() (ring.Pair, bool) {
		inc, gen, ok := d.mux.Version(name)
		return ring.Pair{Incarnation: inc, Generation: gen}, ok
	})
	if s, ok := daemonspi.Lookup(cfg.Strategy); ok {
		if fl, ok := s.(daemonspi.Follower); ok {
			go fl.Follow(ctx, d.strategyHost(cfg.Strategy), st, k, name, log)
		}
	}
	t, err := d.load(ctx, f, *cfg, log)
	if err == nil {
		go f.Run(ctx, t, applier{d: d, cfg: *cfg})
		return nil
	}
	log.Warn("instance not loaded yet: retrying in the background; nothing is forwarded for it until then (a dead predecessor's pinned program keeps forwarding meanwhile)",
		"instance", name, "error", err, "retry", loadRetry)
	go func() {
		pause := store.NewBackoff(200*time.Millisecond, loadRetry)
		for pause.Sleep(ctx) {
			t, err := d.load(ctx, f, *cfg, log)
			if err == nil {
				f.Run(ctx, t, applier{d: d, cfg: *cfg})
				return
			}
			if ctx.Err() == nil {
				log.Warn("instance still not loaded", "instance", name, "error", err)
			}
		}
	}()
	return nil
}

// load is one cold start of an instance into the data plane.
func (d *Daemon) load(ctx context.Context, f *ring.Follower, cfg forwarding.Instance, log *slog.Logger) (*forwarding.Table, error) {
	start := time.Now()
	t, stats, err := f.Load(ctx)
	if err != nil {
		if errors.Is(err, ring.ErrCorrupt) || errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("the ring is damaged (the elected controller repairs it): %w", err)
		}
		return nil, fmt.Errorf("loading forwarding state: %w", err)
	}
	if err := d.SetInstance(cfg, t); err != nil {
		return nil, err
	}
	if d.ring.incarnation != nil {
		d.ring.incarnation.WithLabelValues(cfg.Name).Set(float64(t.Incarnation))
	}
	log.Info("instance loaded", "instance", cfg.Name, "incarnation", t.Incarnation, "generation", t.Generation, "buckets", len(t.Buckets),
		"servers", len(t.Servers), "load", fmt.Sprintf("%+v", stats), "took", time.Since(start))
	return t, nil
}
