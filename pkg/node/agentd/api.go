package agentd

import (
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/httpserver"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
)

// serveAPI starts the agent API (health probes of VIP:port from this
// server, connection counts per bucket, the strategies' paths such as
// Cheetah's key push: strategies.go) unless the configuration turns it off. It runs in the namespace Start runs in, and probes from there.
func (d *Daemon) serveAPI() error {
	addr := d.cfg.APIAddr()
	if addr == "" {
		return nil
	}
	// Default: the DIPs only (the IPv4 one, and the IPv6 one of a server
	// of IPv6 instances: the controller probes each DIP at its address).
	// Bound to every address it would answer on VIP:9300 too, and muxes
	// forward VIP:PORT above 1024 to the server whose id is PORT (MPTCP
	// subflows): clients could reach it.
	var dips []netip.Addr
	if d.cfg.API == "" {
		for _, a := range []netip.Addr{d.cfg.Address, d.cfg.Address6} {
			if a.IsValid() {
				dips = append(dips, a)
			}
		}
		if len(dips) > 0 {
			addr = netip.AddrPortFrom(dips[0], agentapi.DefaultPort).String()
		}
	}
	var vips []netip.Addr
	params := map[netip.Addr]agentapi.VIPParams{}
	for _, v := range d.cfg.VIPs {
		vips = append(vips, v.VIP)
		params[v.VIP] = agentapi.VIPParams{Buckets: v.Buckets, Window: v.Window()}
	}
	if d.opts.APITLS == nil {
		for _, a := range append([]string{addr}, listenAddrs(dips[min(1, len(dips)):])...) {
			if err := nodeauth.CheckPlaintext("agent API", a, d.opts.APIInsecure); err != nil {
				return err
			}
		}
	}
	var err error
	d.api, err = agentapi.Serve(addr, agentapi.Options{VIPs: vips,
		Capacity: &agentapi.CapacityOptions{Iface: d.cfg.Interface, RateBps: d.cfg.CapacityBps},
		Routes:   d.strategyRoutes(), PushFrom: d.cfg.PushFrom(),
		ServerID: uint16(d.cfg.ServerID), Params: params, OnMismatch: mismatchLogger(), TLS: d.opts.APITLS})
	for _, a := range listenAddrs(dips[min(1, len(dips)):]) {
		if err == nil {
			err = d.api.Listen(a)
		}
	}
	return err
}

func listenAddrs(as []netip.Addr) []string {
	var out []string
	for _, a := range as {
		out = append(out, netip.AddrPortFrom(a, agentapi.DefaultPort).String())
	}
	return out
}

// mismatchLogger logs a probe the agent refused because the controller's
// instance is not what this agent was configured for: at error level, once
// a minute per VIP (the controller probes every few seconds), with the
// count of lines held back. The kinds are the agent's own VIPs, never
// what a request says: the reason carries the request's numbers.
func mismatchLogger() func(netip.Addr, string) {
	lines := httpserver.NewLineLimiter(time.Minute)
	return func(vip netip.Addr, why string) {
		lines.Log(slog.Default(), slog.LevelError, "mismatch "+vip.String(),
			"agent: the controller's instance differs from this agent's configuration: refusing its health probes, so the server gets no buckets; restart the agent with the instance's parameters (ctl show)", "vip", vip, "mismatch", why)
	}
}

// APIAddr is the address the agent API listens on, nil when it is off.
func (d *Daemon) APIAddr() net.Addr {
	if d.api == nil {
		return nil
	}
	return d.api.Addr()
}
