package muxd

import (
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/prometheus/client_golang/prometheus"
)

// prismSweep is how long an MCT entry's keep-alive bit must stay clear for
// the entry to count as idle (Prism §3.6: the software checks and clears
// the bit periodically).
const prismSweep = 30 * time.Second

// prismCollector exports each Prism instance's migrated-connection table:
// its entries, its capacity, and how many entries saw no packet during the
// last sweep period (keep-alive bit clear). Bits are swept (cleared) at most
// every prismSweep, at scrape time. Idle entries are not removed here: the
// MCT is the ring's, the same on every mux; the controller prunes it from
// the servers' own connection lists (docs/strategy-prism.md).
type prismCollector struct {
	d                           *Daemon
	mu                          sync.Mutex
	last                        map[string]time.Time
	idle                        map[string]int
	entries, capacity, idleDesc *prometheus.Desc
}

func newPrismCollector(d *Daemon) *prismCollector {
	l := []string{"lb_instance"}
	return &prismCollector{d: d, last: map[string]time.Time{}, idle: map[string]int{},
		entries:  prometheus.NewDesc("beamer_mux_prism_mct_entries", "Entries in the Prism migrated-connection table.", l, nil),
		capacity: prometheus.NewDesc("beamer_mux_prism_mct_capacity", "Size of the Prism migrated-connection table map.", l, nil),
		idleDesc: prometheus.NewDesc("beamer_mux_prism_mct_idle", "MCT entries whose keep-alive bit stayed clear for the last sweep period (no packet through this mux).", l, nil)}
}

func (p *prismCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- p.entries
	ch <- p.capacity
	ch <- p.idleDesc
}

func (p *prismCollector) Collect(ch chan<- prometheus.Metric) {
	p.d.mu.Lock()
	var names []string
	for name, cfg := range p.d.instances {
		if cfg.Strategy == forwarding.StrategyPrism {
			names = append(names, name)
		}
	}
	p.d.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, name := range names {
		sweep := now.Sub(p.last[name]) >= prismSweep
		n, _, size, idle, err := p.d.mux.MCTStats(name, sweep)
		if err != nil {
			continue
		}
		if sweep {
			if !p.last[name].IsZero() {
				p.idle[name] = len(idle)
			}
			p.last[name] = now
		}
		ch <- prometheus.MustNewConstMetric(p.entries, prometheus.GaugeValue, float64(n), name)
		ch <- prometheus.MustNewConstMetric(p.capacity, prometheus.GaugeValue, float64(size), name)
		ch <- prometheus.MustNewConstMetric(p.idleDesc, prometheus.GaugeValue, float64(p.idle[name]), name)
	}
}
