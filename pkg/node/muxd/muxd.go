// Package muxd is the mux daemon: it loads the XDP mux onto an interface,
// keeps its instances' tables current (from a static configuration or by
// following the control store's mux ring), keeps the next hops of all
// servers resolved, and exposes metrics and a health check.
package muxd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/httpserver"
	"github.com/beamer-lb/beamer/pkg/metrics"
	"github.com/beamer-lb/beamer/pkg/node/muxd/daemonspi"
	"github.com/beamer-lb/beamer/pkg/node/nodestate"
	"github.com/cilium/ebpf/link"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
)

// Options configure a mux daemon.
type Options struct {
	Interface string
	Address   netip.Addr // outer source; default: the interface's first IPv4
	// Address6 is the outer source of IPv6 instances and the BGP next hop
	// of IPv6 VIPs; default: the interface's first global IPv6 address, if
	// it has one (without, IPv6 VIPs are neither forwarded nor announced).
	Address6 netip.Addr
	XDPMode  dataplane.XDPMode
	Metrics  string // listen address for /metrics and /healthz; "" = none
	// API is the listen address of the mux node API (api.go: the Prism
	// keep-alive bits the controller collects); "" = none. APITLS is its
	// mutual TLS (nodeauth.ServerConfig, role mux); without it the API is
	// refused off loopback unless APIInsecure.
	API         string
	APITLS      *tls.Config
	APIInsecure bool
	// ConnTrackEntries and MaxNewConnsPerSecond size the Maglev strategy's
	// connection table and its SYN-flood guard (dataplane.MuxOptions).
	ConnTrackEntries     int
	MaxNewConnsPerSecond uint64
	// StateFile records the sysctls the mux changed, restored on exit —
	// also by the next mux when this one is killed. Default:
	// /run/beamer/mux-NETNS-IFACE.json.
	StateFile string
	// PinDir is the bpffs directory where the XDP link and the state maps
	// are pinned: a killed mux's program keeps forwarding with its last
	// tables (no routing loop of VIP packets through the kernel), and the
	// next mux swaps its program in once its tables are loaded (Ready).
	// Default: /sys/fs/bpf/beamer/mux-NETNS-IFACE; "-" turns pinning off.
	PinDir string
	// Health bounds the store-outage and behind-the-store verdicts.
	Health HealthOptions
	Log    *slog.Logger // default slog.Default()
}

// Daemon is a running mux.
type Daemon struct {
	opts    Options
	node    *nodestate.Record
	mux     *dataplane.Mux
	link    link.Link // nil until attached (Ready, when a predecessor's program is pinned)
	nl      *netlink.Handle
	metrics *metrics.Server
	api     *httpserver.Server // the node API (api.go), nil without Options.API
	// services are the strategies' own state the node API and the
	// metrics read (daemonspi.Server: Prism's keep-alive bits).
	services []daemonspi.Service

	stop     chan struct{} // closed once by Close or Abandon (halt): ends the watches
	stopOnce sync.Once

	attachMu sync.Mutex // guards link, adopting and takeover (adopt.go)
	adopting bool       // a predecessor's pinned program forwards until this one takes over
	// bgpUp is the BGP session gauge (bgp_metrics.go), nil without --metrics.
	bgpUp *prometheus.GaugeVec
	// vethPeer is the XDP program given to the veth peer (vethpeer.go), nil if none.
	vethPeer *vethPeer
	takeover takeover

	mu        sync.Mutex
	instances map[string]forwarding.Instance
	// strategyHosts are the daemon sides' hosts with their metrics
	// (strategy_host.go), made at start.
	strategyHosts  map[forwarding.Strategy]daemonspi.Host
	ipv6Forwarding bool    // set once an IPv6 instance arrived (enableIPv6)
	health         *health // store reachability and lag of followed instances (health.go)

	applySeconds prometheus.Histogram
	generation   *prometheus.GaugeVec
	applyErrors  prometheus.Counter

	servers servers // reachability of the servers (servers.go)
	// nextHops follows routes and neighbours into the published next hops
	// (nexthops.go); nil until started.
	nextHops *nextHopFollower
	ring     ringMetrics // ring follower events (follow.go)
}

// InterfaceAddr is the first IPv4 address of an interface.
func InterfaceAddr(name string) (netip.Addr, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return netip.Addr{}, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() {
			return p.Addr(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no IPv4 address", name)
}

// InterfaceAddr6 is the first global unicast IPv6 address of an interface,
// or the zero Addr: link-local addresses cannot be a VIP's next hop beyond
// the link nor an outer source routers forward.
func InterfaceAddr6(name string) netip.Addr {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return netip.Addr{}
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is6() && !p.Addr().Is4In6() && p.Addr().IsGlobalUnicast() {
			return p.Addr()
		}
	}
	return netip.Addr{}
}

// Start loads the mux and attaches it, unless the program of a mux that
// died is still pinned and forwarding: that one stays until Ready swaps
// this one in, once its instances are set. It forwards nothing of its own
// until instances are set.
func Start(opts Options) (*Daemon, error) {
	var noIPv4 error
	if !opts.Address.IsValid() {
		opts.Address, noIPv4 = InterfaceAddr(opts.Interface) // may stay unset: an IPv6-only mux
	}
	if !opts.Address6.IsValid() {
		opts.Address6 = InterfaceAddr6(opts.Interface) // may stay unset: an IPv4-only mux
	}
	if !opts.Address.IsValid() && !opts.Address6.IsValid() {
		return nil, fmt.Errorf("%w, nor a global IPv6 one: the mux needs an address to encapsulate from", noIPv4)
	}
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := opts.checkAPI(); err != nil { // api.go
		return nil, err
	}
	node, err := nodestate.Open(opts.StateFile)
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	d := &Daemon{opts: opts, node: node, instances: map[string]forwarding.Instance{}, stop: make(chan struct{}),
		health: newHealth(opts.Health, opts.Log)}
	if err := d.start(); err != nil {
		if cerr := d.Close(); cerr != nil {
			return nil, fmt.Errorf("%w (undoing the start: %v)", err, cerr)
		}
		return nil, err
	}
	return d, nil
}

func (d *Daemon) start() error {
	opts := d.opts
	// bpf_fib_lookup answers only for interfaces that forward.
	if err := d.node.SetSysctl("net/ipv4/conf/"+opts.Interface+"/forwarding", "1"); err != nil {
		return fmt.Errorf("enabling forwarding on %s: %w", opts.Interface, err)
	}
	var err error
	d.mux, err = dataplane.LoadMux(dataplane.MuxOptions{Addr: opts.Address, Addr6: opts.Address6, ConnTrackEntries: opts.ConnTrackEntries,
		MaxNewConnsPerSecond: opts.MaxNewConnsPerSecond, PinDir: opts.PinDir})
	if err != nil {
		return err
	}
	if d.nl, err = netlink.NewHandle(); err != nil {
		return err
	}
	if d.vethPeer, err = prepareVethPeer(opts.Interface, opts.XDPMode, opts.Log); err != nil {
		return err
	}
	pinned, err := dataplane.PinnedLink(opts.PinDir)
	if err != nil {
		return err
	}
	if pinned != nil {
		pinned.Close()
		d.adopting = true
	} else if err := d.attach(); err != nil {
		return err
	}
	if err := d.watchNextHops(); err != nil {
		// Published next hops are a shortcut: without them every packet
		// asks the FIB (through its per-CPU cache), as before they
		// existed. Entries an earlier daemon left are withdrawn, since
		// nothing follows them now.
		d.mux.WithdrawAllNextHops()
		d.opts.Log.Warn("next hops not published (every packet asks the FIB): watching neighbours and routes failed", "err", err)
	}
	reg := prometheus.NewRegistry() // served only with Options.Metrics
	d.makeStrategyHosts(reg)        // each strategy's own metrics and services (daemonspi)
	if opts.Metrics != "" {
		if err := d.serveMetrics(reg); err != nil {
			return err
		}
	}
	return d.serveAPI() // api.go
}

func (d *Daemon) serveMetrics(reg *prometheus.Registry) error {
	d.applySeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "beamer_mux_apply_seconds",
		Help: "Time to apply one generation or table to the BPF maps.", Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10)})
	d.generation = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "beamer_mux_generation",
		Help: "Generation of the forwarding state loaded, per instance."}, []string{"lb_instance"})
	d.applyErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "beamer_mux_apply_errors_total",
		Help: "Generations or tables the mux refused (the previous state stays in force)."})
	d.bgpUp = newBGPSessionGauge() // bgp_metrics.go
	reg.MustRegister(d.bgpUp)
	d.registerFollowMetrics(reg)
	reg.MustRegister(d.applySeconds, d.generation, d.applyErrors, d.health, newVIPTraffic(d.mux),
		metrics.NewCounterCollector("beamer_mux_packets_total", "Packets by decision of the XDP mux.", "decision", d.mux.Counters))
	for _, c := range d.mux.StrategyCounters() { // each strategy's decision counters (muxspi.Counted)
		reg.MustRegister(metrics.NewCounterCollector(c.Metric, c.Help, "decision", c.Read))
	}
	for _, svc := range d.services {
		if svc.Collector != nil {
			reg.MustRegister(svc.Collector)
		}
	}
	s, err := metrics.Serve(d.opts.Metrics, reg, d.Healthy)
	d.metrics = s
	if err == nil {
		s.HandleStatus(func() (any, error) { return d.Status() }) // status.go
	}
	return err
}

// Healthy is nil while the mux holds at least one instance and, when it
// follows the store, has not lost the store for longer than
// HealthOptions.StoreDownAfter nor withdrawn an instance for being behind.
// It is /healthz's verdict; BGP announcements follow announceVIPs.
func (d *Daemon) Healthy() error {
	d.mu.Lock()
	n := len(d.instances)
	d.mu.Unlock()
	if n == 0 {
		return errors.New("no instance loaded")
	}
	return d.health.degraded()
}

// Mux is the loaded data plane.
func (d *Daemon) Mux() *dataplane.Mux { return d.mux }

// Address is the mux's own IPv4 address (unset on an IPv6-only mux).
func (d *Daemon) Address() netip.Addr { return d.opts.Address }

// enableIPv6 turns IPv6 forwarding on for the mux's interface when its
// first IPv6 instance arrives (bpf_fib_lookup answers
// BPF_FIB_LKUP_RET_FWD_DISABLED on an interface that does not forward): a
// mux of IPv4 instances leaves the host's IPv6 settings alone.
func (d *Daemon) enableIPv6() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ipv6Forwarding {
		return nil
	}
	if err := d.node.SetIPv6Forwarding(d.opts.Interface); err != nil {
		return fmt.Errorf("enabling IPv6 forwarding on %s: %w", d.opts.Interface, err)
	}
	d.ipv6Forwarding = true
	return nil
}

// Address6 is the mux's own IPv6 address (unset on an IPv4-only mux).
func (d *Daemon) Address6() netip.Addr { return d.opts.Address6 }

func (d *Daemon) observe(name string, start time.Time, err error) {
	if d.applySeconds == nil {
		return
	}
	if err != nil {
		d.applyErrors.Inc()
		return
	}
	d.applySeconds.Observe(time.Since(start).Seconds())
	if g, ok := d.mux.Generation(name); ok {
		d.generation.WithLabelValues(name).Set(float64(g))
	}
}

// checkNotOwnAddress refuses an instance with a VIP that is the mux's own
// address: the mux would take every packet to itself (its BGP sessions,
// its /metrics) for the instance's servers.
func checkNotOwnAddress(cfg forwarding.Instance, addr, addr6 netip.Addr) error {
	for _, v := range cfg.VIPs {
		if v.IsValid() && (v == addr || v == addr6) {
			return fmt.Errorf("instance %q: VIP %v is this mux's own address (--addr/--addr6 or the interface's): a VIP must be an address of its own", cfg.Name, v)
		}
	}
	return nil
}

// SetInstance loads a whole table for an instance.
func (d *Daemon) SetInstance(cfg forwarding.Instance, t *forwarding.Table) error {
	if err := checkNotOwnAddress(cfg, d.opts.Address, d.opts.Address6); err != nil {
		return err
	}
	if cfg.Family() == forwarding.IPv6 {
		if err := d.enableIPv6(); err != nil {
			return err
		}
	}
	start := time.Now()
	err := d.mux.SetInstance(cfg, t)
	d.observe(cfg.Name, start, err)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.instances[cfg.Name] = cfg
	d.mu.Unlock()
	if d.opts.Log.Enabled(context.Background(), slog.LevelDebug) {
		// Every whole table installed (a start, a new incarnation, a
		// resync), with its digest, as "generation applied" logs deltas.
		d.opts.Log.Debug("table installed", "instance", cfg.Name, "incarnation", t.Incarnation, "generation", t.Generation, "digest", t.Digest())
	}
	d.ensureServers(cfg.Name)
	d.takeOverIfReady()
	return nil
}

// ApplyDelta applies one generation to an instance.
func (d *Daemon) ApplyDelta(name string, delta *forwarding.Delta) error {
	start := time.Now()
	err := d.mux.ApplyDelta(name, delta)
	d.observe(name, start, err)
	if err != nil {
		return err
	}
	if inc, gen, ok := d.mux.Version(name); ok {
		attrs := []any{"instance", name, "incarnation", inc, "generation", gen, "apply", time.Since(start).Round(time.Microsecond)}
		// The table's digest (forwarding.Table.Digest) costs a pass over
		// the buckets: logged at debug level only, for histories
		// (research/faults/history) that check no pair names two tables.
		if d.opts.Log.Enabled(context.Background(), slog.LevelDebug) {
			if dg, ok := d.mux.Digest(name); ok {
				attrs = append(attrs, "digest", dg)
			}
		}
		d.opts.Log.Info("generation applied", attrs...)
	}
	if len(delta.Servers) > 0 {
		d.checkChanged(name, delta.Servers)
	}
	return nil
}

// RemoveInstance stops forwarding an instance's VIPs.
func (d *Daemon) RemoveInstance(name string) error {
	d.mu.Lock()
	delete(d.instances, name)
	d.mu.Unlock()
	return d.mux.RemoveInstance(name)
}

// Abandon ends this process's part — watches, metrics, descriptors — but
// leaves the program pinned and forwarding with its last tables, and
// forwarding on, for the next mux to take over: a hitless upgrade
// (SIGUSR2). Routes are the caller's: an announcer closed with the process
// withdraws them.
func (d *Daemon) Abandon() error {
	d.halt()
	if d.api != nil {
		d.api.Close()
	}
	d.attachMu.Lock()
	defer d.attachMu.Unlock()
	d.takeover.wanted = false
	if d.metrics != nil {
		d.metrics.Close()
	}
	if d.link != nil {
		d.link.Close()
	}
	if d.nl != nil {
		d.nl.Close()
	}
	if d.vethPeer != nil {
		d.vethPeer.release() // the pinned program still needs it
	}
	if d.mux != nil {
		// The pinned program forwards on with no one following its
		// published next hops: it asks the FIB from now on (nexthops.go).
		d.mux.RetireNextHops()
		return d.mux.Close()
	}
	return nil
}

// halt ends the watches; Close after Abandon (or twice) must not panic.
func (d *Daemon) halt() { d.stopOnce.Do(func() { close(d.stop) }) }

// Close detaches and unpins the mux, frees everything and restores the
// sysctls. A mux that never attached (its start failed while a
// predecessor's program was pinned) leaves that program forwarding.
func (d *Daemon) Close() error {
	d.halt()
	if d.api != nil {
		d.api.Close()
	}
	var errs []error
	if d.metrics != nil {
		d.metrics.Close()
	}
	d.attachMu.Lock()
	defer d.attachMu.Unlock()
	d.takeover.wanted = false // an instance loading now must not attach
	if d.link != nil {
		if err := dataplane.Unpin(d.opts.PinDir, d.link); err != nil {
			errs = append(errs, err)
		}
		d.link.Close()
	} else if d.opts.PinDir != "" && !d.adopting {
		dataplane.Unpin(d.opts.PinDir, nil) // state maps pinned by a start that failed
	}
	if d.nl != nil {
		d.nl.Close()
	}
	if d.mux != nil {
		if err := d.mux.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if !d.adopting {
		// The predecessor's program still forwards through this
		// interface; it needs forwarding on.
		if err := d.node.Undo(); err != nil {
			errs = append(errs, err)
		}
		if d.vethPeer != nil {
			if err := d.vethPeer.remove(); err != nil {
				errs = append(errs, fmt.Errorf("removing the veth peer's XDP program: %w", err))
			}
		}
	} else if d.vethPeer != nil {
		d.vethPeer.release()
	}
	return errors.Join(errs...)
}

func (o *Options) defaults() error {
	if o.StateFile != "" && o.PinDir != "" {
		if o.PinDir == "-" {
			o.PinDir = ""
		}
		return nil
	}
	name, err := nodestate.Name("mux", o.Interface)
	if err != nil {
		return err
	}
	nodestate.SweepStale(nodestate.DefaultDir, filepath.Join(dataplane.BPFFSRoot, "beamer"), dataplane.Attached)
	if o.StateFile == "" {
		o.StateFile = filepath.Join(nodestate.DefaultDir, name+".json")
	}
	switch o.PinDir {
	case "":
		o.PinDir = filepath.Join(dataplane.BPFFSRoot, "beamer", name)
	case "-":
		o.PinDir = ""
	}
	return nil
}
