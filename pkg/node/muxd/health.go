package muxd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/prometheus/client_golang/prometheus"
)

// HealthOptions bound how long the mux tolerates losing touch with the
// store before it says so (docs/control-plane.md, "Health and BGP policy").
type HealthOptions struct {
	// StoreDownAfter: /healthz reports the mux degraded once the store has
	// been unreachable this long (default 30 s). Forwarding and BGP
	// announcements go on regardless.
	StoreDownAfter time.Duration
	// WithdrawBehindAfter: an instance whose latest generation the mux
	// cannot apply while the store answers has its VIPs withdrawn from BGP
	// after this long (default 30 s; negative: never). They are announced
	// again as soon as the mux has caught up.
	WithdrawBehindAfter time.Duration
	// Probe is how often the store is asked for each instance's latest
	// generation (default 1 s).
	Probe time.Duration
	// WarnBehindAfter: a lag shorter than this is a generation being
	// applied, logged at debug; one that lasts is logged as a warning
	// (default 5 s, and at the latest when the VIPs are withdrawn).
	WarnBehindAfter time.Duration
	// RefusedBehindAfter: a store pair lower than the one the mux runs is
	// refused (a rollback the controller repairs at a newer pair, within
	// its verify period); refused this long, the mux counts as behind —
	// metric, /healthz, log and withdrawal as above (default 20 s).
	RefusedBehindAfter time.Duration
}

func (o *HealthOptions) fill() {
	if o.StoreDownAfter == 0 {
		o.StoreDownAfter = 30 * time.Second
	}
	if o.WithdrawBehindAfter == 0 {
		o.WithdrawBehindAfter = 30 * time.Second
	}
	if o.Probe == 0 {
		o.Probe = time.Second
	}
	if o.WarnBehindAfter == 0 {
		o.WarnBehindAfter = 5 * time.Second
	}
	if o.RefusedBehindAfter == 0 {
		o.RefusedBehindAfter = 20 * time.Second
	}
}

// health tracks, for the instances followed from the store, whether the
// store answers and whether the mux runs the latest generation. It only
// reads: the store's latest-gen pointer (its own probe) and the follower's
// status; it never drives the follower.
type health struct {
	opts HealthOptions
	log  *slog.Logger
	now  func() time.Time

	mu        sync.Mutex
	st        store.Store
	up        bool
	downSince time.Time // first failed probe of the current outage
	lastErr   error
	instances map[string]*instanceHealth
	started   bool

	upDesc, ageDesc, behindDesc, withdrawnDesc *prometheus.Desc
}

type instanceHealth struct {
	keys     ring.Keys
	follower *ring.Follower
	applied  func() (ring.Pair, bool)

	latest         ring.Pair // store's latest pair, when readable
	lastSync       time.Time // last probe that found the mux current
	behindSince    time.Time // zero while current
	warned         bool      // the current lag was logged as a warning
	refusingSince  time.Time // the store's pair is lower than the mux's since; zero otherwise
	refusedTooLong bool      // the refusal outlasted RefusedBehindAfter (logged once)
	withdrawn      bool
}

func newHealth(opts HealthOptions, log *slog.Logger) *health {
	opts.fill()
	return &health{opts: opts, log: log, now: time.Now, up: true, instances: map[string]*instanceHealth{},
		upDesc: prometheus.NewDesc("beamer_mux_store_up",
			"1 while the last probe of the control store got an answer, 0 while it is unreachable.", nil, nil),
		ageDesc: prometheus.NewDesc("beamer_mux_sync_age_seconds",
			"Seconds since the mux last found itself running the store's latest generation, per instance.", []string{"lb_instance"}, nil),
		behindDesc: prometheus.NewDesc("beamer_mux_behind",
			"1 while the store answers but the mux does not run its latest generation, per instance.", []string{"lb_instance"}, nil),
		withdrawnDesc: prometheus.NewDesc("beamer_mux_bgp_withdrawn",
			"1 while the instance's VIPs are withdrawn from BGP because the mux is behind.", []string{"lb_instance"}, nil),
	}
}

// track starts watching a followed instance; applied reads the generation
// the data plane runs.
func (h *health) track(stop <-chan struct{}, st store.Store, name string, k ring.Keys, f *ring.Follower, applied func() (ring.Pair, bool)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.st = st
	h.instances[name] = &instanceHealth{keys: k, follower: f, applied: applied, lastSync: h.now()}
	if !h.started {
		h.started = true
		go h.run(stop)
	}
}

func (h *health) run(stop <-chan struct{}) {
	t := time.NewTicker(h.opts.Probe)
	defer t.Stop()
	for {
		h.probe()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// probe asks the store for every instance's latest generation once.
func (h *health) probe() {
	h.mu.Lock()
	keys := make(map[string]string, len(h.instances))
	names := make([]string, 0, len(h.instances))
	for n, in := range h.instances {
		names = append(names, n)
		keys[n] = in.keys.LatestGen()
	}
	st := h.st
	h.mu.Unlock()
	slices.Sort(names)
	for _, name := range names {
		timeout := min(h.opts.Probe, 2*time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		item, err := st.Get(ctx, keys[name])
		cancel()
		h.observe(name, item.Value, err)
	}
}

// observe records one probe's answer and logs each change of state once.
func (h *health) observe(name string, latest []byte, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	in := h.instances[name]
	// Any answer, even "no such key", means the store is reachable.
	answered := err == nil || errors.Is(err, store.ErrNotFound)
	switch {
	case !answered && h.up:
		h.up, h.downSince, h.lastErr = false, now, err
		h.log.Warn("control store unreachable: forwarding and announcing with the last state",
			"instance", name, "error", err)
	case !answered:
		h.lastErr = err
	case !h.up:
		h.up = true
		h.log.Info("control store reachable again", "outage", now.Sub(h.downSince).Round(time.Millisecond))
	}
	if !answered {
		return
	}
	applied, ok := in.applied()
	failing := in.follower.Status().LastError
	// Behind: the store's latest-gen pointer names a newer (incarnation,
	// generation) pair than the mux runs. When the pointer is unreadable,
	// the follower's own verdict (its last round failed) stands in. A
	// failure left over from an outage does not count while the pointer
	// shows the mux current. A lower pair is refused by the follower (a
	// store going back); the controller repairs it at a newer pair within
	// seconds, so a refusal only makes the mux behind once it has lasted
	// RefusedBehindAfter — and it is never "caught up" meanwhile.
	behind := !ok
	refusing := false
	if p, perr := ring.ParsePointer(latest); err == nil && perr == nil {
		in.latest = p
		behind = behind || applied.Less(p)
		refusing = ok && p.Less(applied)
	} else {
		behind = behind || failing != nil
	}
	if !refusing {
		in.refusingSince, in.refusedTooLong = time.Time{}, false
	} else if in.refusingSince.IsZero() {
		in.refusingSince = now
		h.log.Debug("the store names an older state than this mux runs: refused, waiting for the controller to publish a newer one",
			"instance", name, "running", applied.String(), "store_latest", in.latest.String())
	}
	if refusing && !in.refusedTooLong && now.Sub(in.refusingSince) >= h.opts.RefusedBehindAfter {
		in.refusedTooLong = true
		h.log.Warn("instance behind the store: it has named an older state than this mux runs for too long (is a controller elected? did it publish a wrapped or rolled-back incarnation?)",
			"instance", name, "running", applied.String(), "store_latest", in.latest.String(),
			"refusing_for", now.Sub(in.refusingSince).Round(time.Millisecond))
	}
	if refusing && !in.refusedTooLong {
		// Neither current nor (yet) behind: the state stays as it is and
		// the sync age grows.
		return
	}
	behind = behind || in.refusedTooLong
	switch {
	case !behind:
		if !in.behindSince.IsZero() {
			level := slog.LevelDebug // a generation applied: routine
			if in.warned {
				level = slog.LevelInfo
			}
			h.log.Log(context.Background(), level, "instance caught up with the store", "instance", name, "running", applied.String(),
				"behind_for", now.Sub(in.behindSince).Round(time.Millisecond))
		}
		if in.withdrawn {
			h.log.Info("instance's VIPs announced again", "instance", name)
		}
		in.behindSince, in.warned, in.withdrawn, in.lastSync = time.Time{}, false, false, now
		return
	case in.behindSince.IsZero():
		in.behindSince = now
		// Every ordinary generation change passes through here for the
		// moment the mux takes to apply it.
		h.log.Debug("instance behind the store", "instance", name, "running", applied.String(), "store_latest", in.latest.String(),
			"follower_error", truncErr(failing))
	}
	in.warned = in.warned || in.refusedTooLong // said so above
	withdraw := h.opts.WithdrawBehindAfter > 0 && now.Sub(in.behindSince) >= h.opts.WithdrawBehindAfter
	if !in.warned && (withdraw || now.Sub(in.behindSince) >= h.opts.WarnBehindAfter) {
		in.warned = true
		h.log.Warn("instance behind the store", "instance", name, "running", applied.String(), "store_latest", in.latest.String(),
			"behind_for", now.Sub(in.behindSince).Round(time.Millisecond), "follower_error", truncErr(failing))
	}
	if withdraw && !in.withdrawn {
		in.withdrawn = true
		h.log.Warn("instance behind the store too long: withdrawing its VIPs from BGP", "instance", name,
			"behind_for", now.Sub(in.behindSince).Round(time.Millisecond), "running", applied.String(), "store_latest", in.latest.String())
	}
}

// truncErr quotes at most a short prefix of an error (values read from the
// store can be large).
func truncErr(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// withdrawn says whether the instance's VIPs must not be announced.
func (h *health) withdrawn(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	in, ok := h.instances[name]
	return ok && in.withdrawn
}

// degraded is the /healthz verdict on the store side: nil, or what is wrong.
func (h *health) degraded() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	var errs []error
	if !h.up && now.Sub(h.downSince) >= h.opts.StoreDownAfter {
		errs = append(errs, fmt.Errorf("control store unreachable for %v (forwarding with the last state): %s",
			now.Sub(h.downSince).Round(time.Second), truncErr(h.lastErr)))
	}
	names := make([]string, 0, len(h.instances))
	for n := range h.instances {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		in := h.instances[n]
		switch {
		case in.withdrawn:
			errs = append(errs, fmt.Errorf("instance %s behind the store for %v: VIPs withdrawn from BGP", n,
				now.Sub(in.behindSince).Round(time.Second)))
		case in.refusedTooLong:
			errs = append(errs, fmt.Errorf("instance %s behind the store: refusing its older state %v for %v (running a newer one)", n,
				in.latest, now.Sub(in.refusingSince).Round(time.Second)))
		}
	}
	return errors.Join(errs...)
}

// Describe implements prometheus.Collector.
func (h *health) Describe(ch chan<- *prometheus.Desc) {
	ch <- h.upDesc
	ch <- h.ageDesc
	ch <- h.behindDesc
	ch <- h.withdrawnDesc
}

// Collect implements prometheus.Collector.
func (h *health) Collect(ch chan<- prometheus.Metric) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.started {
		return // static mux: no store
	}
	now := h.now()
	ch <- prometheus.MustNewConstMetric(h.upDesc, prometheus.GaugeValue, b2f(h.up))
	for name, in := range h.instances {
		ch <- prometheus.MustNewConstMetric(h.ageDesc, prometheus.GaugeValue, now.Sub(in.lastSync).Seconds(), name)
		ch <- prometheus.MustNewConstMetric(h.behindDesc, prometheus.GaugeValue, b2f(!in.behindSince.IsZero()), name)
		ch <- prometheus.MustNewConstMetric(h.withdrawnDesc, prometheus.GaugeValue, b2f(in.withdrawn), name)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
