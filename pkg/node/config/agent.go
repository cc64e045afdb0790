package config

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// Agent is a server agent's static configuration.
type Agent struct {
	Interface string     `yaml:"interface"`         // where decapsulation runs
	Address   netip.Addr `yaml:"address,omitempty"` // the server's DIP; default: the interface's first IPv4
	// Address6 is the server's IPv6 DIP, where GUE over IPv6 for its IPv6
	// VIPs arrives; default: the interface's first global IPv6 address.
	Address6 netip.Addr          `yaml:"address6,omitempty"`
	ServerID forwarding.ServerID `yaml:"server_id"` // 1025–65535, advertised to MPTCP clients
	Trusted  []netip.Prefix      `yaml:"trusted"`   // muxes and servers allowed to send encapsulated packets
	// Controllers may push Cheetah keys to the agent API (default: the
	// trusted prefixes). Docs: docs/strategy-cheetah.md, "Keys and rotation".
	Controllers []netip.Prefix `yaml:"controllers,omitempty"`
	VIPs        []AgentVIP     `yaml:"vips"`
	// ManageVIPs puts the VIPs on loopback and sets the ARP sysctls that
	// keep the server from answering for them (default true).
	ManageVIPs *bool `yaml:"manage_vips,omitempty"`
	// MPTCP advertises VIP:server_id to MPTCP clients (default true).
	MPTCP   *bool  `yaml:"mptcp,omitempty"`
	Metrics string `yaml:"metrics,omitempty"` // listen address of /metrics and /healthz
	API     string `yaml:"api,omitempty"`     // listen address of the agent API (see APIAddr)
	// CapacityBps is the interface's rate for GET /v1/capacity when no
	// tbf/htb root qdisc states it (0: unknown; AWFD instances need one of
	// the two, or a CPU quota on the agent's cgroup).
	CapacityBps float64 `yaml:"capacity_bps,omitempty"`
	// GUEPorts: UDP ports on which the agent takes GUE from trusted
	// sources besides 6080 (forwarding.DefaultGUEPort), which it always
	// takes: the gue_port of every encap-gue instance this server is in.
	GUEPorts []uint16 `yaml:"gue_ports,omitempty"`
}

// AgentVIP is one VIP served, with its instance's bucket count and window.
type AgentVIP struct {
	VIP         netip.Addr     `yaml:"vip"`
	Buckets     uint32         `yaml:"buckets"`
	ChainWindow *time.Duration `yaml:"chain_window,omitempty"` // default 4m; 0s disables chaining
	// Cheetah: the VIP's instance uses the cheetah strategy with these
	// keys (the instance's, as `ctl create --cheetah-keys-file` took them; the
	// file holding them must be mode 600); the agent writes the cookie
	// naming server_id into every segment the server sends from the VIP.
	Cheetah *cookie.Keys `yaml:"cheetah,omitempty"`
	// Strategy is the VIP's instance's strategy when it matters to the
	// agent: "cheetah" takes the keys the controller pushes (agent_cheetah.go).
	Strategy forwarding.Strategy `yaml:"strategy,omitempty"`
}

// Window is the chaining window, the default when unset.
func (v AgentVIP) Window() time.Duration {
	if v.ChainWindow == nil {
		return forwarding.DefaultChainWindow
	}
	return *v.ChainWindow
}

// PushFrom are the prefixes whose hosts may push Cheetah keys: the
// controllers, default the trusted prefixes.
func (c *Agent) PushFrom() []netip.Prefix {
	if len(c.Controllers) > 0 {
		return c.Controllers
	}
	return c.Trusted
}

// LoadAgent reads and validates an agent configuration file.
func LoadAgent(path string) (*Agent, error) {
	var c Agent
	if err := decodeFile(path, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkKeysFile(path, &c); err != nil { // agent_cheetah.go
		return nil, err
	}
	return &c, nil
}

// Flag reports a *bool option, true when unset.
func Flag(b *bool) bool { return b == nil || *b }

// Validate checks the configuration.
func (c *Agent) Validate() error {
	if c.Interface == "" {
		return errors.New("interface: missing")
	}
	if c.Address.IsValid() && !c.Address.Is4() {
		return fmt.Errorf("address %v: not an IPv4 address (an IPv6 one goes in address6)", c.Address)
	}
	if c.Address6.IsValid() && (!c.Address6.Is6() || c.Address6.Is4In6()) {
		return fmt.Errorf("address6 %v: not an IPv6 address (an IPv4 one goes in address)", c.Address6)
	}
	for name, a := range map[string]netip.Addr{"address": c.Address, "address6": c.Address6} {
		if a.IsValid() {
			if err := forwarding.CheckDIP(a); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	if !c.ServerID.Valid() {
		return fmt.Errorf("server_id %d: must be in %d–%d", c.ServerID, forwarding.MinServerID, forwarding.MaxServerID)
	}
	if len(c.Trusted) == 0 {
		return errors.New("trusted: no prefix (the muxes' and servers' addresses)")
	}
	for _, p := range c.Trusted {
		if err := checkTrustPrefix(p); err != nil {
			return fmt.Errorf("trusted prefix %v: %w", p, err)
		}
	}
	for _, p := range c.Controllers {
		if err := checkTrustPrefix(p); err != nil {
			return fmt.Errorf("controllers prefix %v: %w", p, err)
		}
	}
	if math.IsNaN(c.CapacityBps) || math.IsInf(c.CapacityBps, 0) || c.CapacityBps < 0 {
		return fmt.Errorf("capacity_bps %v: must be a positive rate in bits/s (0 or unset: from the tbf/htb qdisc)", c.CapacityBps)
	}
	if len(c.VIPs) == 0 {
		return errors.New("vips: none configured")
	}
	for _, p := range c.GUEPorts {
		if p == 0 {
			return errors.New("gue_ports: port 0 (a GUE port is 1–65535)")
		}
	}
	if err := c.validateAPI(); err != nil {
		return err
	}
	seen := map[netip.Addr]bool{}
	for _, v := range c.VIPs {
		if err := forwarding.CheckVIP(v.VIP); err != nil {
			return err
		}
		if seen[v.VIP] {
			return fmt.Errorf("vip %v: listed twice", v.VIP)
		}
		seen[v.VIP] = true
		if v.VIP == c.Address || v.VIP == c.Address6 {
			return fmt.Errorf("vip %v: is also the server's own address", v.VIP)
		}
		if v.Buckets == 0 {
			return fmt.Errorf("vip %v: buckets missing (the instance's B)", v.VIP)
		}
		if v.Buckets < forwarding.MinBuckets || v.Buckets > forwarding.MaxBuckets {
			return fmt.Errorf("vip %v: buckets %d must be in %d–%d (the instance's B)", v.VIP, v.Buckets, forwarding.MinBuckets, forwarding.MaxBuckets)
		}
		if err := forwarding.CheckChainWindow(v.Window()); err != nil {
			return fmt.Errorf("vip %v: %w", v.VIP, err)
		}
		if v.VIP.Is6() && !slices.ContainsFunc(c.Trusted, func(p netip.Prefix) bool { return p.Addr().Is6() }) {
			return fmt.Errorf("vip %v: IPv6, but no trusted prefix is IPv6 (GUE over IPv6 arrives from the muxes' IPv6 addresses)", v.VIP)
		}
		if err := v.checkStrategy(); err != nil { // agent_cheetah.go
			return err
		}
		if v.Cheetah != nil && v.VIP.Is6() {
			return fmt.Errorf("vip %v: cheetah does not forward IPv6 (an IPv6 instance needs strategy beamer)", v.VIP)
		}
		if v.Cheetah != nil {
			if c.ServerID > cookie.MaxID {
				return fmt.Errorf("vip %v: server_id %d does not fit a Cheetah cookie (at most %d)", v.VIP, c.ServerID, cookie.MaxID)
			}
			if v.Cheetah.Current > 1 || v.Cheetah.Keys[v.Cheetah.Current] == (cookie.Key{}) {
				return fmt.Errorf("vip %v: cheetah keys: current key id must be 0 or 1 and its key set", v.VIP)
			}
		}
	}
	return nil
}

// checkTrustPrefix says why p cannot name the hosts an agent trusts: a
// prefix of length 0 trusts every host (anyone could have the server relay
// packets or push keys), and host bits below the length mean a typo whose
// intent is unknown (198.18.0.10/24: the host, or its /24?).
func checkTrustPrefix(p netip.Prefix) error {
	switch {
	case !p.IsValid() || p.Addr().Is4In6() || p.Addr().Zone() != "":
		return errors.New("not an IPv4 or IPv6 prefix")
	case p.Bits() == 0:
		return errors.New("trusts every address: name the muxes' and servers' (or controllers') prefix")
	case p.Masked() != p:
		return fmt.Errorf("has host bits set: write %v (the network) or %v/%d (the one host)", p.Masked(), p.Addr(), p.Addr().BitLen())
	}
	return nil
}
