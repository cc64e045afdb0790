package dataplane

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// configureGUE marks the agent's GUE ports (bpf/include/gue_agent.h
// gue_ports): the default port always, so that instances with encap gue
// and no port of their own need nothing on the servers, and ports. UDP to
// this server's address on a GUE port is then the agent's: decapsulated
// from trusted sources, dropped (counted) from others, like IP-in-IP.
func (a *Agent) configureGUE(ports []uint16) error {
	for _, p := range append([]uint16{forwarding.DefaultGUEPort}, ports...) {
		if p == 0 {
			return fmt.Errorf("GUE port 0")
		}
		if err := a.objs.GuePorts.Put(uint32(p), uint8(1)); err != nil {
			return fmt.Errorf("GUE port %d: %w", p, err)
		}
	}
	return nil
}
