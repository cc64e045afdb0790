package config

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/beamer-lb/beamer/pkg/node/agentapi"
)

// APIOff in Agent.API turns the agent API off: the controller then cannot
// probe services bound to the VIP nor ask which connections the server
// still holds (it falls back to the fixed chaining window).
const APIOff = "off"

// APIAddr is where the agent serves its API: Agent.API, default ":9300"
// (the agent binds it to its DIP only: the controller reaches it at
// DIP:agent_port), "" if off.
func (c *Agent) APIAddr() string {
	switch c.API {
	case "":
		return ":" + strconv.Itoa(agentapi.DefaultPort)
	case APIOff:
		return ""
	}
	return c.API
}

func (c *Agent) validateAPI() error {
	a := c.APIAddr()
	if a == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("api %q: want ADDRESS:PORT or %q: %v", c.API, APIOff, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("api %q: port must be 0–65535", c.API)
	}
	if c.API == "" {
		return nil // the DIP, port 9300 (APIAddr)
	}
	// The API must listen on one address of the server's own, not on
	// every address: on the VIP (or on all of them) clients could reach
	// it, as muxes forward VIP:PORT above 1024 to the server whose id is
	// PORT (MPTCP subflows).
	const want = "give the server's address (DIP:PORT), a loopback address, or leave api unset for DIP:9300"
	if host == "" {
		return fmt.Errorf("api %q: listens on every address, the VIPs included, where clients could reach it: %s", c.API, want)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("api %q: %q is not an IP address: %s", c.API, host, want)
	}
	switch {
	case ip.IsUnspecified():
		return fmt.Errorf("api %q: %v listens on every address, the VIPs included, where clients could reach it: %s", c.API, ip, want)
	case ip.Zone() == "" && c.isVIP(ip):
		return fmt.Errorf("api %q: %v is a VIP: clients could reach the API there: %s", c.API, ip, want)
	}
	return nil
}

func (c *Agent) isVIP(a netip.Addr) bool {
	for _, v := range c.VIPs {
		if v.VIP == a.Unmap() {
			return true
		}
	}
	return false
}
