package config

import (
	"fmt"
	"net"
	"strconv"

	"github.com/beamer-lb/beamer/pkg/agentapi"
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
	_, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("api %q: want HOST:PORT, :PORT or %q: %v", c.API, APIOff, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("api %q: port must be 0–65535", c.API)
	}
	return nil
}
