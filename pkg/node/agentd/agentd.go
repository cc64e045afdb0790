// Package agentd is the server agent daemon: it prepares the server to
// answer for its VIPs (VIPs on loopback, ARP sysctls), loads the tc agent
// onto the server's interface, advertises VIP:server-id to MPTCP clients,
// keeps the program's clock in step with Unix time, and serves metrics.
// Servers never talk to the control store.
package agentd

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/metrics"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/node/agentd/agentdspi"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/node/mptcp"
	"github.com/beamer-lb/beamer/pkg/node/nodestate"
	"github.com/cilium/ebpf/link"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
)

// Daemon is a running agent.
type Daemon struct {
	cfg   config.Agent
	opts  Options
	node  *nodestate.Record
	lock  *os.File // the interface's agent lock (cleanup.go)
	agent *dataplane.Agent
	link  link.Link
	// services are the started strategies' sides (strategies.go: Cheetah's
	// keys and cookie writer).
	services []agentdspi.Service
	xdp      link.Link           // the XDP fast path (xdp.go), nil without one
	vipStats *dataplane.VIPStats // per-VIP counters (vipstats.go), nil without --metrics
	metrics  *metrics.Server
	api      *agentapi.Endpoint

	stop     chan struct{}
	stopOnce sync.Once // Close after Abandon (or twice) must not panic
	wg       sync.WaitGroup
}

// Options say where the agent keeps what must outlive its process.
type Options struct {
	// StateFile records the sysctls, loopback addresses and MPTCP
	// endpoints the agent changed, with their earlier values, so that
	// Cleanup or Close undoes them — also after several agents, each
	// stopped with Abandon, followed one another. Default:
	// /run/beamer/agent-NETNS-IFACE.json.
	StateFile string
	// PinDir is the bpffs directory where the tc program's link and state
	// maps are pinned: a stopped or killed agent's program keeps
	// decapsulating, and the next agent swaps its own in. Default:
	// /sys/fs/bpf/beamer/agent-NETNS-IFACE. "-" turns pinning off.
	PinDir string
	// XDP says whether the XDP fast path runs in front of the tc program
	// (xdp.go): XDPAuto (default), XDPNative or XDPOff.
	XDP string
	// APITLS is the agent API's mutual TLS (nodeauth.ServerConfig, role
	// agent); nil serves plaintext, refused off loopback unless
	// APIInsecure (api.go).
	APITLS      *tls.Config
	APIInsecure bool
}

func (o *Options) defaults(iface string) error {
	if o.StateFile == "" || o.PinDir == "" {
		name, err := nodestate.Name("agent", iface)
		if err != nil {
			return err
		}
		nodestate.SweepStale(nodestate.DefaultDir, filepath.Join(dataplane.BPFFSRoot, "beamer"), dataplane.Attached)
		if o.StateFile == "" {
			o.StateFile = filepath.Join(nodestate.DefaultDir, name+".json")
		}
		if o.PinDir == "" {
			o.PinDir = filepath.Join(dataplane.BPFFSRoot, "beamer", name)
		}
	}
	if o.PinDir == "-" {
		o.PinDir = ""
	}
	return nil
}

// Start sets the server up as cfg says and starts the agent. On any error
// everything it did so far is undone before it returns.
func Start(cfg config.Agent, opts Options) (*Daemon, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := defaultAddresses(&cfg); err != nil {
		return nil, err
	}
	if err := opts.defaults(cfg.Interface); err != nil {
		return nil, err
	}
	lock, err := lockNode(opts.StateFile)
	if err != nil {
		return nil, err
	}
	node, err := nodestate.Open(opts.StateFile)
	if err != nil {
		lock.Close()
		return nil, err
	}
	d := &Daemon{cfg: cfg, opts: opts, node: node, lock: lock, stop: make(chan struct{})}
	if err := d.start(); err != nil {
		if cerr := d.Close(); cerr != nil {
			return nil, fmt.Errorf("%w (undoing the start: %v)", err, cerr)
		}
		return nil, err
	}
	return d, nil
}

func (d *Daemon) start() error {
	cfg := d.cfg
	var err error
	if config.Flag(cfg.ManageVIPs) {
		if err := d.setupVIPs(); err != nil {
			return err
		}
	}
	// Chained packets leave through bpf_fib_lookup, which answers only for
	// interfaces that forward.
	if err := d.node.SetSysctl("net/ipv4/conf/"+cfg.Interface+"/forwarding", "1"); err != nil {
		return err
	}
	if _, v6 := families(cfg); v6 {
		if err := d.node.SetIPv6Forwarding(cfg.Interface); err != nil {
			return err
		}
	}
	opts := dataplane.AgentOptions{Addr: cfg.Address, Addr6: cfg.Address6, Trusted: cfg.Trusted, PinDir: d.opts.PinDir, GUEPorts: cfg.GUEPorts}
	for _, v := range cfg.VIPs {
		opts.VIPs = append(opts.VIPs, dataplane.AgentVIP{VIP: v.VIP, Buckets: v.Buckets, ChainWindow: v.Window()})
	}
	if d.agent, err = dataplane.LoadAgent(opts); err != nil {
		return err
	}
	adopting := d.adoptable()
	if d.link, err = d.agent.Attach(cfg.Interface); err != nil {
		return err
	}
	if adopting {
		slog.Info("took over the previous agent's pinned program (it decapsulated while no agent ran)", "interface", cfg.Interface, "pin_dir", d.opts.PinDir)
	}
	if err := d.startXDP(); err != nil {
		return err
	}
	if err := d.startStrategies(); err != nil {
		return err
	}
	if config.Flag(cfg.MPTCP) {
		if err := d.advertise(); err != nil {
			return err
		}
		if w := mptcpIPv6Warning(cfg); w != "" {
			slog.Warn(w)
		}
	}
	d.wg.Add(1)
	go d.syncClock()
	if cfg.Metrics != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewCounterCollector("beamer_agent_packets_total", "Packets by decision of the server agent.", "decision", d.agent.Counters))
		d.registerStrategyMetrics(reg)
		if err := d.startVIPStats(); err != nil {
			return err
		}
		reg.MustRegister(newVIPCollector(d.vipStats))
		if d.metrics, err = metrics.Serve(cfg.Metrics, reg, func() error { return nil }); err != nil {
			return err
		}
		d.metrics.HandleStatus(func() (any, error) { return d.Status() }) // status.go
	}
	if err := d.serveAPI(); err != nil {
		return err
	}
	// Last, once this agent runs: a start that fails leaves the
	// predecessor's program with everything it served.
	return d.pruneInherited()
}

// setupVIPs puts the VIPs on loopback, where the stack accepts packets to
// them, and keeps the server from answering ARP for them: only muxes
// attract VIP traffic, and replies leave with the VIP as source (DSR).
func (d *Daemon) setupVIPs() error {
	for _, kv := range [][2]string{{"net/ipv4/conf/all/arp_ignore", "1"}, {"net/ipv4/conf/all/arp_announce", "2"}} {
		if err := d.node.SetSysctl(kv[0], kv[1]); err != nil {
			return err
		}
	}
	for _, v := range d.cfg.VIPs {
		if err := d.node.AddLoAddr(v.VIP); err != nil {
			return err
		}
	}
	return nil
}

// pruneInherited drops what a predecessor set up that this agent's
// configuration no longer asks for (a VIP removed, another server id,
// VIP management or MPTCP turned off): a stop leaves the node set up for
// the next agent, which must end as a fresh start would.
func (d *Daemon) pruneInherited() error {
	var vips []netip.Addr
	if config.Flag(d.cfg.ManageVIPs) {
		for _, v := range d.cfg.VIPs {
			vips = append(vips, v.VIP)
		}
	}
	if err := d.node.PruneLoAddrs(vips); err != nil {
		return err
	}
	var endpoints []nodestate.Endpoint
	if config.Flag(d.cfg.MPTCP) {
		for _, v := range d.cfg.VIPs {
			endpoints = append(endpoints, nodestate.Endpoint{Addr: v.VIP, Port: uint16(d.cfg.ServerID)})
		}
	}
	return d.node.PruneEndpoints(endpoints)
}

// advertise adds one signal endpoint VIP:server-id per VIP: after an MPTCP
// connection is up, the kernel announces it to the client (ADD_ADDR), and
// the client's further subflows are addressed to the server's id.
func (d *Daemon) advertise() error {
	c, err := mptcp.Dial()
	if err != nil {
		return err
	}
	defer c.Close()
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	for _, v := range d.cfg.VIPs {
		e := mptcp.Endpoint{Addr: v.VIP, Port: uint16(d.cfg.ServerID), Flags: mptcp.FlagSignal, IfIndex: int32(lo.Attrs().Index)}
		if err := d.node.AddEndpoint(c, e); err != nil {
			return err
		}
	}
	return nil
}

// syncClock keeps the program's Unix clock current across wall-clock steps.
func (d *Daemon) syncClock() {
	defer d.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case now := <-t.C:
			d.agent.SyncClock(now)
		}
	}
}

// Agent is the loaded program.
func (d *Daemon) Agent() *dataplane.Agent { return d.agent }

// Address is the server's address.
func (d *Daemon) Address() netip.Addr { return d.cfg.Address }

// Close detaches the agent, unpins it (its Cheetah keys too) and undoes
// what Start set up: the uninstall (cleanup.go). A stop meant to be
// followed by a start is Abandon.
func (d *Daemon) Close() error {
	// A start that failed before taking over a predecessor's pinned
	// program leaves that program, its pins and the node setup it needs.
	keep := d.link == nil && d.opts.PinDir != "" && d.adoptable()
	errs := d.release(!keep)
	if !keep {
		if err := d.node.Undo(); err != nil {
			errs = append(errs, err)
		}
	}
	d.unlock(!keep)
	return errors.Join(errs...)
}

// Abandon ends this process's part — clock, API, metrics, descriptors —
// but leaves the programs pinned and decapsulating (with the Cheetah keys
// and the cookie writer) and the node set up, for the next agent to adopt:
// what `beamer agent` does on SIGTERM, SIGINT and SIGUSR2, so a planned
// restart or an upgrade is hitless.
func (d *Daemon) Abandon() error {
	errs := d.release(false)
	d.unlock(false)
	return errors.Join(errs...)
}

// unlock lets the next agent (or a cleanup) take the interface; remove
// drops the lock file too, after an uninstall.
func (d *Daemon) unlock(remove bool) {
	if d.lock == nil {
		return
	}
	if remove {
		os.Remove(d.lock.Name())
	}
	d.lock.Close()
	d.lock = nil
}

// release stops the goroutines and servers and closes the descriptors;
// with unpin the attachment is removed too.
func (d *Daemon) release(unpin bool) []error {
	d.stopOnce.Do(func() { close(d.stop) })
	d.wg.Wait()
	var errs []error
	if d.metrics != nil {
		d.metrics.Close()
	}
	if d.api != nil {
		d.api.Close()
	}
	if unpin && d.link != nil {
		if err := dataplane.Unpin(d.opts.PinDir, d.link); err != nil {
			errs = append(errs, err)
		}
	} else if unpin && d.opts.PinDir != "" {
		dataplane.Unpin(d.opts.PinDir, nil) // state maps pinned by a start that failed
	}
	d.closeStrategies()
	if d.xdp != nil {
		d.xdp.Close()
	}
	if d.vipStats != nil {
		if err := d.vipStats.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if d.link != nil {
		d.link.Close()
	}
	if d.agent != nil {
		if err := d.agent.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// adoptable says whether an earlier agent's program is still pinned and
// attached: a start that failed before taking it over leaves it alone.
func (d *Daemon) adoptable() bool { return d.opts.PinDir != "" && dataplane.Attached(d.opts.PinDir) }
