package agentd

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/config"
	"github.com/beamer-lb/beamer/pkg/muxd"
)

// defaultAddresses fills the server's addresses the configuration leaves
// out from the interface: the IPv4 one when it serves an IPv4 VIP (or has
// one at all), the IPv6 one when it serves an IPv6 VIP, where GUE over
// IPv6 arrives and chained packets leave from. A family it serves but has
// no address of is an error that names the missing setting.
func defaultAddresses(cfg *config.Agent) error {
	v4, v6 := families(*cfg)
	if !cfg.Address.IsValid() {
		a, err := muxd.InterfaceAddr(cfg.Interface)
		if err != nil && v4 {
			return err
		}
		cfg.Address = a // unset on an IPv6-only server
	}
	if !cfg.Address6.IsValid() && v6 {
		cfg.Address6 = muxd.InterfaceAddr6(cfg.Interface)
		if !cfg.Address6.IsValid() {
			return fmt.Errorf("the agent serves IPv6 VIPs but interface %s has no global IPv6 address: give address6 (--addr6)", cfg.Interface)
		}
	}
	return nil
}

// families says which families the agent's VIPs use.
func families(cfg config.Agent) (v4, v6 bool) {
	for _, v := range cfg.VIPs {
		v4, v6 = v4 || v.VIP.Is4(), v6 || v.VIP.Is6()
	}
	return v4, v6
}
