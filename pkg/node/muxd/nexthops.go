package muxd

import (
	"github.com/vishvananda/netlink"
)

// watchNextHops flushes the XDP program's next-hop cache whenever a
// neighbour or a route changes, so a server's new MAC or path is used at
// once rather than within the cache's one-second epoch.
func (d *Daemon) watchNextHops() error {
	neigh := make(chan netlink.NeighUpdate, 64)
	route := make(chan netlink.RouteUpdate, 64)
	if err := netlink.NeighSubscribe(neigh, d.stop); err != nil {
		return err
	}
	if err := netlink.RouteSubscribe(route, d.stop); err != nil {
		return err
	}
	go func() {
		for {
			select {
			case _, ok := <-neigh:
				if !ok {
					return
				}
			case _, ok := <-route:
				if !ok {
					return
				}
			}
			d.mux.FlushNextHops()
		}
	}()
	return nil
}
