package forwarding

import (
	"fmt"
	"net/netip"
)

// Claims is who uses which address across all instances of one store (or
// one static file), to refuse the conflicts no single instance can see:
//
//   - a VIP in two instances. Muxes look a packet's instance up by its
//     destination address alone (one VIP entry per address, holding the
//     port range), so two instances sharing a VIP — even on disjoint ports
//     — cannot both be followed by one mux: one VIP:port has one owner, and
//     so does the VIP.
//   - a VIP that is some instance's DIP, or a DIP that is some instance's
//     VIP: packets encapsulated to that server would come back to the muxes
//     as VIP traffic.
//
// The same server (DIP address) may serve several instances. Conflicts
// already in the store (recorded before these checks existed) are recorded
// with their first owner and never block reading; only the new VIP or DIP
// being checked is refused.
type Claims struct {
	vips map[netip.Addr]string   // VIP → instance
	dips map[netip.Addr]dipOwner // DIP address → one instance using it
}

type dipOwner struct {
	instance string
	id       ServerID
}

// NewClaims returns empty claims.
func NewClaims() *Claims {
	return &Claims{vips: map[netip.Addr]string{}, dips: map[netip.Addr]dipOwner{}}
}

// AddInstance checks the VIPs of in against everything recorded, then
// records them (the first owner of a VIP stays its owner).
func (c *Claims) AddInstance(in *Instance) error {
	var first error
	for _, v := range in.VIPs {
		if err := c.checkVIP(in.Name, v); err != nil && first == nil {
			first = err
		}
		if _, ok := c.vips[v]; !ok {
			c.vips[v] = in.Name
		}
	}
	return first
}

func (c *Claims) checkVIP(name string, v netip.Addr) error {
	if other, ok := c.vips[v]; ok && other != name {
		return fmt.Errorf("VIP %v is already a VIP of instance %q (one instance per VIP: muxes find the instance by destination address)", v, other)
	}
	if d, ok := c.dips[v]; ok {
		return fmt.Errorf("VIP %v is the address of DIP %d of instance %q", v, d.id, d.instance)
	}
	return nil
}

// AddDIP checks a DIP address of instance name (CheckDIP, and not a VIP of
// any instance), then records it.
func (c *Claims) AddDIP(name string, id ServerID, addr netip.Addr) error {
	err := CheckDIP(addr)
	if err == nil {
		if owner, ok := c.vips[addr]; ok {
			err = fmt.Errorf("DIP address %v is a VIP of instance %q", addr, owner)
		}
	}
	if _, ok := c.dips[addr]; !ok {
		c.dips[addr] = dipOwner{instance: name, id: id}
	}
	return err
}
