// Package agentd is the server agent daemon: it prepares the server to
// answer for its VIPs (VIPs on loopback, ARP sysctls), loads the tc agent
// onto the server's interface, advertises VIP:server-id to MPTCP clients,
// keeps the program's clock in step with Unix time, and serves metrics.
// Servers never talk to the control store.
package agentd

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/agentapi"
	"github.com/beamer-lb/beamer/pkg/config"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/metrics"
	"github.com/beamer-lb/beamer/pkg/mptcp"
	"github.com/beamer-lb/beamer/pkg/muxd"
	"github.com/cilium/ebpf/link"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vishvananda/netlink"
)

// Daemon is a running agent.
type Daemon struct {
	cfg     config.Agent
	agent   *dataplane.Agent
	link    link.Link
	metrics *metrics.Server
	api     *agentapi.Endpoint

	addedVIPs []netip.Addr
	endpoints []uint8
	stop      chan struct{}
	wg        sync.WaitGroup
}

// Start sets the server up as cfg says and starts the agent.
func Start(cfg config.Agent) (d *Daemon, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Address.IsValid() {
		if cfg.Address, err = muxd.InterfaceAddr(cfg.Interface); err != nil {
			return nil, err
		}
	}
	d = &Daemon{cfg: cfg, stop: make(chan struct{})}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if config.Flag(cfg.ManageVIPs) {
		if err := d.setupVIPs(); err != nil {
			return nil, err
		}
	}
	// Chained packets leave through bpf_fib_lookup, which answers only for
	// interfaces that forward.
	if err := sysctl("net/ipv4/conf/"+cfg.Interface+"/forwarding", "1"); err != nil {
		return nil, err
	}
	opts := dataplane.AgentOptions{Addr: cfg.Address, Trusted: cfg.Trusted}
	for _, v := range cfg.VIPs {
		opts.VIPs = append(opts.VIPs, dataplane.AgentVIP{VIP: v.VIP, Buckets: v.Buckets, ChainWindow: v.Window()})
	}
	if d.agent, err = dataplane.LoadAgent(opts); err != nil {
		return nil, err
	}
	if d.link, err = d.agent.Attach(cfg.Interface); err != nil {
		return nil, err
	}
	if config.Flag(cfg.MPTCP) {
		if err := d.advertise(); err != nil {
			return nil, err
		}
	}
	d.wg.Add(1)
	go d.syncClock()
	if cfg.Metrics != "" {
		reg := prometheus.NewRegistry()
		reg.MustRegister(metrics.NewCounterCollector("beamer_agent_packets_total", "Packets by decision of the server agent.", "decision", d.agent.Counters))
		if d.metrics, err = metrics.Serve(cfg.Metrics, reg, func() error { return nil }); err != nil {
			return nil, err
		}
	}
	if err := d.serveAPI(); err != nil {
		return nil, err
	}
	return d, nil
}

func sysctl(key, value string) error {
	if err := os.WriteFile("/proc/sys/"+key, []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s: %w", strings.ReplaceAll(key, "/", "."), err)
	}
	return nil
}

// setupVIPs puts the VIPs on loopback, where the stack accepts packets to
// them, and keeps the server from answering ARP for them: only muxes
// attract VIP traffic, and replies leave with the VIP as source (DSR).
func (d *Daemon) setupVIPs() error {
	for _, kv := range [][2]string{{"net/ipv4/conf/all/arp_ignore", "1"}, {"net/ipv4/conf/all/arp_announce", "2"}} {
		if err := sysctl(kv[0], kv[1]); err != nil {
			return err
		}
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	for _, v := range d.cfg.VIPs {
		a, _ := netlink.ParseAddr(netip.PrefixFrom(v.VIP, 32).String())
		err := netlink.AddrAdd(lo, a)
		if errors.Is(err, syscall.EEXIST) {
			continue
		}
		if err != nil {
			return fmt.Errorf("VIP %v on loopback: %w", v.VIP, err)
		}
		d.addedVIPs = append(d.addedVIPs, v.VIP)
	}
	return nil
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
		if err := c.Add(e); err != nil {
			return err
		}
	}
	list, err := c.List()
	if err != nil {
		return err
	}
	for _, e := range list {
		for _, v := range d.cfg.VIPs {
			if e.Addr == v.VIP && e.Port == uint16(d.cfg.ServerID) {
				d.endpoints = append(d.endpoints, e.ID)
			}
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

// Close detaches the agent and undoes what Start set up.
func (d *Daemon) Close() error {
	close(d.stop)
	d.wg.Wait()
	if d.metrics != nil {
		d.metrics.Close()
	}
	if d.api != nil {
		d.api.Close()
	}
	if d.link != nil {
		d.link.Close()
	}
	if len(d.endpoints) > 0 {
		if c, err := mptcp.Dial(); err == nil {
			for _, id := range d.endpoints {
				c.Delete(id)
			}
			c.Close()
		}
	}
	if lo, err := netlink.LinkByName("lo"); err == nil {
		for _, v := range d.addedVIPs {
			a, _ := netlink.ParseAddr(netip.PrefixFrom(v, 32).String())
			netlink.AddrDel(lo, a)
		}
	}
	if d.agent != nil {
		return d.agent.Close()
	}
	return nil
}
