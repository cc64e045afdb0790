package agentd

import (
	"fmt"
	"os"
	"strings"

	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/node/muxd"
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

// mptcpIPv6Warning says why MPTCP clients of the agent's IPv6 VIPs would
// get no secondary subflow, or "": the ADD_ADDR announcing VIP:server-id
// for an IPv6 VIP takes 30 bytes of TCP options (address, port, HMAC), and
// with TCP timestamps (12 bytes) negotiated it never fits in the 40 a
// segment has, so the kernel does not send it. Measured in the lab: no
// subflow at all with timestamps, every one without. Turning timestamps
// off is the operator's call (it changes every TCP connection of the
// server), so the agent only says it.
func mptcpIPv6Warning(cfg config.Agent) string {
	if _, v6 := families(cfg); !v6 || !config.Flag(cfg.MPTCP) {
		return ""
	}
	ts, err := os.ReadFile("/proc/sys/net/ipv4/tcp_timestamps")
	if err != nil || strings.TrimSpace(string(ts)) == "0" {
		return ""
	}
	return "MPTCP clients of IPv6 VIPs get no secondary subflow while TCP timestamps are on: " +
		"an IPv6 ADD_ADDR with the server-id port does not fit beside them (sysctl net.ipv4.tcp_timestamps=0 on this server lets it through)"
}
