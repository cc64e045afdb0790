package forwarding

import (
	"fmt"
	"net/netip"
)

// CheckServer refuses a server (DIP) that cannot be one of in's: an id
// outside MinServerID–MaxServerID or the instance's server-id range, an id
// the strategy cannot carry (StrategySpec.CheckServer), an address that is
// not unicast (CheckDIP) or not of the instance's family, a weight outside
// 1–MaxWeight (CheckWeight). Every way a server enters — a `ctl add-dip`
// request, a declarative file, a static mux file — asks this one method.
// Whether the address is another instance's VIP or another server's is
// Claims' business: that takes every instance, not this one.
func (in *Instance) CheckServer(id ServerID, addr netip.Addr, weight uint32) error {
	if !id.Valid() {
		return fmt.Errorf("server id %d is outside %d–%d (ids up to 1024 are service ports)", id, MinServerID, MaxServerID)
	}
	if ids := in.ServerIDs(); !ids.None && !ids.Contains(uint16(id)) {
		return fmt.Errorf("server id %d is outside instance %s's server-id range %v: its MPTCP subflows (port = id) would be dropped", id, in.Name, ids)
	}
	if s, ok := registered[in.Strategy]; ok && s.CheckServer != nil {
		if err := s.CheckServer(id); err != nil {
			return err
		}
	}
	if err := CheckDIP(addr); err != nil {
		return err
	}
	if err := in.CheckDIPFamily(addr); err != nil {
		return err
	}
	return CheckWeight(weight)
}
