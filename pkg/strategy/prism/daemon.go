package prism

import (
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/muxd/daemonspi"
	"github.com/beamer-lb/beamer/pkg/strategy/prism/migration"
	"github.com/prometheus/client_golang/prometheus"
)

// daemonSide: the mux daemon keeps the keep-alive bits it sweeps and
// serves them to the controller and the metrics (daemonspi.Server).
type daemonSide struct{}

func init() { daemonspi.Register(forwarding.StrategyPrism, daemonSide{}) }

func (daemonSide) Serve(h daemonspi.Host) daemonspi.Service {
	p := newPrismBits(h)
	return daemonspi.Service{Routes: map[string]http.HandlerFunc{"POST " + migration.KeepAlivePath: p.serveKeepAlive}, Collector: p}
}

// prismSweep is the period of beamer_mux_prism_mct_idle: entries no packet
// hit through this mux for that long.
const prismSweep = 30 * time.Second

// prismBits keeps the keep-alive bits of each Prism instance's MCT. The
// XDP program sets an entry's bit on a hit; reading the bits clears them
// (a sweep), so whoever sweeps must keep what it saw: the hits since the
// controller's last collection (pending, handed out by POST
// /v1/prism/keepalive, migration.KeepAlivePath) and since the metric's last
// period (seen). The mux never writes the store and removes nothing: the
// MCT is the ring's, the same on every mux; the controller decides from
// the bits of every mux and the servers' socket lists
// (docs/strategy-prism.md, "Pruning").
type prismBits struct {
	h       daemonspi.Host
	mu      sync.Mutex
	pending map[string]map[uint64]struct{}
	seen    map[string]map[uint64]struct{}
	last    map[string]time.Time // start of the metric's period
	idle    map[string]int       // the metric's value for the last full period

	entries, capacity, idleDesc *prometheus.Desc
}

func newPrismBits(h daemonspi.Host) *prismBits {
	l := []string{"lb_instance"}
	return &prismBits{h: h, pending: map[string]map[uint64]struct{}{}, seen: map[string]map[uint64]struct{}{},
		last: map[string]time.Time{}, idle: map[string]int{},
		entries:  prometheus.NewDesc("beamer_mux_prism_mct_entries", "Entries in the Prism migrated-connection table.", l, nil),
		capacity: prometheus.NewDesc("beamer_mux_prism_mct_capacity", "Size of the Prism migrated-connection table map.", l, nil),
		idleDesc: prometheus.NewDesc("beamer_mux_prism_mct_idle", "MCT entries no packet hit through this mux during the last 30 s period (keep-alive bit never set).", l, nil)}
}

// sweep reads and clears the bits of one instance and records the hits
// for both consumers. p.mu is held.
func (p *prismBits) sweep(name string) (MCTBits, error) {
	b, err := MCTStats(p.h.WithInstance, name, true)
	if err != nil {
		return b, err
	}
	for _, m := range []map[string]map[uint64]struct{}{p.pending, p.seen} {
		if m[name] == nil {
			m[name] = map[uint64]struct{}{}
		}
		for _, sig := range b.Hit {
			m[name][sig] = struct{}{}
		}
	}
	return b, nil
}

// collect is the controller's read: the signatures hit since its last
// one.
func (p *prismBits) collect(name string) (*migration.KeepAliveReport, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, err := p.sweep(name)
	if err != nil {
		return nil, err
	}
	r := &migration.KeepAliveReport{Instance: name, Generation: b.Generation, Entries: b.Entries, Hit: make([]uint64, 0, len(p.pending[name]))}
	for sig := range p.pending[name] {
		r.Hit = append(r.Hit, sig)
	}
	delete(p.pending, name)
	return r, nil
}

// serveKeepAlive answers POST /v1/prism/keepalive?instance=NAME.
func (p *prismBits) serveKeepAlive(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST: reading the keep-alive bits clears them", http.StatusMethodNotAllowed)
		return
	}
	name := r.URL.Query().Get("instance")
	rep, err := p.collect(name)
	switch {
	case errors.Is(err, muxspi.ErrUnknownInstance):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(rep)
}

func (p *prismBits) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.entries
	ch <- p.capacity
	ch <- p.idleDesc
}

func (p *prismBits) Collect(ch chan<- prometheus.Metric) {
	names := p.h.Instances()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, name := range names {
		b, err := p.sweep(name)
		if err != nil {
			continue
		}
		if now.Sub(p.last[name]) >= prismSweep {
			if !p.last[name].IsZero() {
				idle := 0
				for _, sig := range b.Idle {
					if _, hit := p.seen[name][sig]; !hit {
						idle++
					}
				}
				p.idle[name] = idle
			}
			p.last[name] = now
			delete(p.seen, name)
		}
		ch <- prometheus.MustNewConstMetric(p.entries, prometheus.GaugeValue, float64(b.Entries), name)
		ch <- prometheus.MustNewConstMetric(p.capacity, prometheus.GaugeValue, float64(b.Size), name)
		ch <- prometheus.MustNewConstMetric(p.idleDesc, prometheus.GaugeValue, float64(p.idle[name]), name)
	}
}
