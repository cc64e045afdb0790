package muxd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/ring"
	"github.com/beamer-lb/beamer/pkg/store"
)

// applier hands the Follower's generations of one instance to the daemon.
type applier struct {
	d   *Daemon
	cfg forwarding.Instance
}

func (a applier) ApplyDelta(d *forwarding.Delta) error { return a.d.ApplyDelta(a.cfg.Name, d) }
func (a applier) Replace(t *forwarding.Table) error    { return a.d.SetInstance(a.cfg, t) }

// Follow loads an instance from the store (latest blob, then the deltas
// after it) and keeps it current in the background until ctx ends. The mux
// only reads the store. Once loaded, a store outage or a corrupt generation
// leaves the last good state forwarding; errors are logged and counted.
func (d *Daemon) Follow(ctx context.Context, st store.Store, root, name string, log *slog.Logger) error {
	k := ring.InstanceKeys(root, name)
	cfg, err := ring.ReadInstance(ctx, st, k)
	if err != nil {
		return fmt.Errorf("instance %q: %w", name, err)
	}
	f := ring.NewFollower(st, k, ring.FollowerOptions{OnError: func(err error) {
		log.Warn("mux ring", "instance", name, "error", err)
		if d.applyErrors != nil {
			d.applyErrors.Inc()
		}
	}})
	start := time.Now()
	t, stats, err := f.Load(ctx)
	if err != nil {
		return fmt.Errorf("instance %q: loading forwarding state: %w", name, err)
	}
	if err := d.SetInstance(*cfg, t); err != nil {
		return fmt.Errorf("instance %q: %w", name, err)
	}
	log.Info("instance loaded", "instance", name, "generation", t.Generation, "buckets", len(t.Buckets),
		"servers", len(t.Servers), "load", fmt.Sprintf("%+v", stats), "took", time.Since(start))
	go f.Run(ctx, t, applier{d: d, cfg: *cfg})
	d.health.track(d.stop, st, name, k, f, func() (uint32, bool) { return d.mux.Generation(name) })
	return nil
}
