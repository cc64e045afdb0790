package muxd

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// One server the mux cannot reach (no route, no neighbour: an address like
// 255.255.255.255, or a unicast address with no path from this mux) must
// not stop the mux from installing generations: the table goes in whole,
// packets of that server's buckets are dropped and counted by the XDP
// program (drop_no_route), and the server is reported here — logged when
// it becomes unreachable and when it comes back, and exported as
// beamer_mux_server_unreachable{lb_instance,server} — while everything else
// forwards and newer generations keep applying.

// recheckEvery is how often unreachable servers are tried again (a route
// or neighbour can appear without any new generation); every
// fullCheckEvery all servers are checked again (a route can also go away).
// A generation checks only the servers it adds or changes: at 64K servers a
// check of all of them takes seconds of netlink calls, which delayed the
// next generation (issue 18).
const (
	recheckEvery   = 10 * time.Second
	fullCheckEvery = 5 * time.Minute
)

// servers tracks the reachability of every instance's servers.
type servers struct {
	check sync.Mutex // one check at a time: each merges into the last verdicts
	mu    sync.Mutex
	bad   map[string]map[netip.Addr]string // instance → server → why
	gauge *prometheus.GaugeVec             // nil without metrics
	log   *slog.Logger
	once  sync.Once
}

// Unreachable returns the servers of an instance the mux has no path to,
// with the reason.
func (d *Daemon) Unreachable(name string) map[netip.Addr]string { return d.servers.get(name) }

// ensureServers makes the next hops of all of an instance's servers
// resolvable (managed neighbours) and reports each server that has none.
// It never fails the installation of a generation.
func (d *Daemon) ensureServers(name string) { d.checkServers(name, nil) }

// checkServers checks the servers in only (nil: all the instance's) and
// keeps the last verdict on the others; servers no longer in the table
// are forgotten.
func (d *Daemon) checkServers(name string, only []netip.Addr) {
	d.servers.check.Lock()
	defer d.servers.check.Unlock()
	addrs := d.mux.ServerAddrs(name)
	bad := map[netip.Addr]string{}
	check := addrs
	if only != nil {
		current := make(map[netip.Addr]bool, len(addrs))
		for _, a := range addrs {
			current[a] = true
		}
		for a, why := range d.servers.get(name) {
			if current[a] {
				bad[a] = why
			}
		}
		check = check[:0:0]
		for _, a := range only {
			if current[a] {
				check = append(check, a)
			}
		}
	}
	for _, a := range check {
		delete(bad, a)
		if why := d.unicastRoute(a); why != "" {
			bad[a] = why
		} else if err := dataplane.EnsureNeighbors(d.nl, []netip.Addr{a}); err != nil {
			bad[a] = err.Error()
		}
	}
	d.servers.set(name, bad)
	d.servers.once.Do(func() { go d.recheckServers() })
	d.nextHops.resolveSoon() // new servers' next hops (nexthops.go)
}

// checkChanged checks the servers a generation adds or changes.
func (d *Daemon) checkChanged(name string, changes []forwarding.ServerChange) {
	var changed []netip.Addr
	for _, c := range changes {
		if !c.Remove {
			changed = append(changed, c.Server.Addr)
		}
	}
	d.checkServers(name, changed)
}

// unicastRoute says why the mux cannot send to a server, or "": the
// address must be unicast and its route a unicast one (a broadcast,
// local, unreachable or prohibit route gives the XDP program no next hop).
func (d *Daemon) unicastRoute(a netip.Addr) string {
	if forwarding.CheckDIP(a) != nil {
		return "not a unicast IPv4 or IPv6 address"
	}
	routes, err := d.nl.RouteGet(net.IP(a.AsSlice()))
	if err != nil || len(routes) == 0 {
		return fmt.Sprintf("no route: %v", err)
	}
	if t := routes[0].Type; t != unix.RTN_UNICAST {
		return fmt.Sprintf("route of type %d (not unicast)", t)
	}
	return ""
}

// set replaces an instance's unreachable servers, logging each change once.
func (s *servers) set(name string, bad map[netip.Addr]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bad == nil {
		s.bad = map[string]map[netip.Addr]string{}
	}
	old := s.bad[name]
	for a, why := range bad {
		if _, known := old[a]; !known {
			s.logger().Warn("server unreachable from this mux: its buckets are dropped (drop_no_route) until it is reachable; other servers forward",
				"instance", name, "server", a, "error", why)
			if s.gauge != nil {
				s.gauge.WithLabelValues(name, a.String()).Set(1)
			}
		}
	}
	for a := range old {
		if _, still := bad[a]; !still {
			s.logger().Info("server reachable again (or no longer in the table)", "instance", name, "server", a)
			if s.gauge != nil {
				s.gauge.DeleteLabelValues(name, a.String())
			}
		}
	}
	if len(bad) == 0 {
		delete(s.bad, name)
	} else {
		s.bad[name] = bad
	}
}

func (s *servers) logger() *slog.Logger {
	if s.log == nil {
		return slog.Default()
	}
	return s.log
}

// get is a copy of an instance's unreachable servers.
func (s *servers) get(name string) map[netip.Addr]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[netip.Addr]string, len(s.bad[name]))
	for a, why := range s.bad[name] {
		out[a] = why
	}
	return out
}

// recheckServers tries the unreachable servers again every recheckEvery,
// and all servers of every instance every fullCheckEvery, until the daemon
// closes.
func (d *Daemon) recheckServers() {
	t := time.NewTicker(recheckEvery)
	defer t.Stop()
	lastFull := time.Now()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		if time.Since(lastFull) >= fullCheckEvery {
			lastFull = time.Now()
			d.mu.Lock()
			var names []string
			for n := range d.instances {
				names = append(names, n)
			}
			d.mu.Unlock()
			for _, n := range names {
				d.ensureServers(n)
			}
			continue
		}
		d.servers.mu.Lock()
		retry := map[string][]netip.Addr{}
		for n, bad := range d.servers.bad {
			for a := range bad {
				retry[n] = append(retry[n], a)
			}
		}
		d.servers.mu.Unlock()
		for n, addrs := range retry {
			d.checkServers(n, addrs)
		}
	}
}
