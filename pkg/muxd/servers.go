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
// or neighbour can appear without any new generation).
const recheckEvery = 10 * time.Second

// servers tracks the reachability of every instance's servers.
type servers struct {
	mu    sync.Mutex
	bad   map[string]map[netip.Addr]string // instance → server → why
	gauge *prometheus.GaugeVec             // nil without metrics
	log   *slog.Logger
	once  sync.Once
}

// Unreachable returns the servers of an instance the mux has no path to,
// with the reason.
func (d *Daemon) Unreachable(name string) map[netip.Addr]string {
	d.servers.mu.Lock()
	defer d.servers.mu.Unlock()
	out := map[netip.Addr]string{}
	for a, why := range d.servers.bad[name] {
		out[a] = why
	}
	return out
}

// ensureServers makes the next hops of an instance's servers resolvable
// (managed neighbours) and reports each server that has none. It never
// fails the installation of a generation.
func (d *Daemon) ensureServers(name string) {
	addrs := d.mux.ServerAddrs(name)
	bad := map[netip.Addr]string{}
	for _, a := range addrs {
		if why := d.unicastRoute(a); why != "" {
			bad[a] = why
		} else if err := dataplane.EnsureNeighbors(d.nl, []netip.Addr{a}); err != nil {
			bad[a] = err.Error()
		}
	}
	d.servers.set(name, bad)
	if len(bad) > 0 {
		d.servers.once.Do(func() { go d.recheckServers() })
	}
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

// recheckServers tries the instances with unreachable servers again
// until the daemon closes.
func (d *Daemon) recheckServers() {
	t := time.NewTicker(recheckEvery)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		d.servers.mu.Lock()
		var names []string
		for n := range d.servers.bad {
			names = append(names, n)
		}
		d.servers.mu.Unlock()
		for _, n := range names {
			d.ensureServers(n)
		}
	}
}
