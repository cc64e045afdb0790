package muxd

import (
	"errors"
	"fmt"

	api "github.com/osrg/gobgp/v3/api"
)

// check says what is missing from the options before any session starts:
// an IPv4 peer is reached from the IPv4 next hop, an IPv6 one from the
// IPv6 next hop, and the router id — a 32-bit number written as an IPv4
// address — defaults to the IPv4 next hop.
func (o *BGPOptions) check() error {
	if o.ASN == 0 || len(o.Peers) == 0 {
		return errors.New("bgp: need an AS number and at least one peer")
	}
	if o.NextHop.IsValid() && !o.NextHop.Is4() {
		return fmt.Errorf("bgp: next hop %v is not IPv4 (the IPv6 one is NextHop6)", o.NextHop)
	}
	if o.NextHop6.IsValid() && (!o.NextHop6.Is6() || o.NextHop6.Is4In6()) {
		return fmt.Errorf("bgp: IPv6 next hop %v is not IPv6", o.NextHop6)
	}
	if o.RouterID.IsValid() && !o.RouterID.Is4() {
		return fmt.Errorf("bgp: router id %v: BGP identifiers are written as IPv4 addresses", o.RouterID)
	}
	if !o.RouterID.IsValid() && !o.NextHop.IsValid() {
		return errors.New("bgp: need an IPv4 next hop, or a router id (an IPv4-form number) on an IPv6-only mux")
	}
	for _, p := range o.Peers {
		if p.Addr.Is4() && !o.NextHop.IsValid() {
			return fmt.Errorf("bgp: peer %v is IPv4 but the mux has no IPv4 address to reach it from", p.Addr)
		}
		if p.Addr.Is6() && !o.NextHop6.IsValid() {
			return fmt.Errorf("bgp: peer %v is IPv6 but the mux has no IPv6 address to reach it from", p.Addr)
		}
	}
	return nil
}

// families are the address families every session negotiates: IPv4
// unicast when the mux has an IPv4 next hop, IPv6 unicast when it has an
// IPv6 one. Routers that do not take a family simply leave it out of the
// session (its routes are then not exchanged; the other family still is).
func (o *BGPOptions) families() []*api.AfiSafi {
	var out []*api.AfiSafi
	add := func(afi api.Family_Afi) {
		out = append(out, &api.AfiSafi{Config: &api.AfiSafiConfig{Family: &api.Family{Afi: afi, Safi: api.Family_SAFI_UNICAST}, Enabled: true}})
	}
	if o.NextHop.IsValid() {
		add(api.Family_AFI_IP)
	}
	if o.NextHop6.IsValid() {
		add(api.Family_AFI_IP6)
	}
	return out
}
