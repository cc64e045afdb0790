package agentd

import (
	"net"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/agentapi"
)

// serveAPI starts the agent API (health probes of VIP:port from this
// server, connection counts per bucket) unless the configuration turns it
// off. It runs in the namespace Start runs in, and probes from there.
func (d *Daemon) serveAPI() error {
	addr := d.cfg.APIAddr()
	if addr == "" {
		return nil
	}
	if d.cfg.API == "" {
		// Default: the DIP only. Bound to every address it would answer on
		// VIP:9300 too, and muxes forward VIP:PORT above 1024 to the server
		// whose id is PORT (MPTCP subflows): clients could reach it.
		addr = netip.AddrPortFrom(d.cfg.Address, agentapi.DefaultPort).String()
	}
	var vips []netip.Addr
	for _, v := range d.cfg.VIPs {
		vips = append(vips, v.VIP)
	}
	var err error
	d.api, err = agentapi.Serve(addr, agentapi.Options{VIPs: vips,
		Capacity: &agentapi.CapacityOptions{Iface: d.cfg.Interface, RateBps: d.cfg.CapacityBps},
		Cheetah:  d.takeCheetahKeys, PushFrom: d.cfg.PushFrom()})
	return err
}

// APIAddr is the address the agent API listens on, nil when it is off.
func (d *Daemon) APIAddr() net.Addr {
	if d.api == nil {
		return nil
	}
	return d.api.Addr()
}
