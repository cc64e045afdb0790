package config

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Mux is a mux's static configuration file.
type Mux struct {
	Interface string     `yaml:"interface"`         // where the XDP program runs
	Address   netip.Addr `yaml:"address,omitempty"` // outer source; default: the interface's first IPv4
	// Address6 is the outer source of IPv6 instances (GUE over IPv6);
	// default: the interface's first global IPv6 address.
	Address6  netip.Addr    `yaml:"address6,omitempty"`
	XDPMode   string        `yaml:"xdp_mode,omitempty"` // "driver" (default) or "generic"
	Metrics   string        `yaml:"metrics,omitempty"`  // listen address of /metrics and /healthz
	Instances []MuxInstance `yaml:"instances"`
}

// MuxInstance is one instance with its servers; the mux spreads the buckets
// over them by weight as the controller would (Beamer §4.5).
type MuxInstance struct {
	forwarding.Instance `yaml:",inline"`
	Servers             []StaticServer `yaml:"servers"`
}

// StaticServer is one server of a static instance.
type StaticServer struct {
	ID      forwarding.ServerID `yaml:"id"`
	Address netip.Addr          `yaml:"address"`
	// Weight is relative, default 1; 0 is refused (leave the server out
	// of the file to give it no traffic).
	Weight *uint32 `yaml:"weight,omitempty"`
}

// weight is the server's weight, 1 when unset.
func (s StaticServer) weight() uint32 {
	if s.Weight == nil {
		return 1
	}
	return *s.Weight
}

// LoadMux reads and validates a mux configuration file.
func LoadMux(path string) (*Mux, error) {
	var c Mux
	if err := decodeFile(path, &c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// Validate checks the configuration.
func (c *Mux) Validate() error {
	if c.Interface == "" {
		return errors.New("interface: missing")
	}
	if c.Address.IsValid() && (!c.Address.Is4() || c.Address.IsUnspecified()) {
		return fmt.Errorf("address %v: not a unicast IPv4 address (an IPv6 one goes in address6)", c.Address)
	}
	if c.Address6.IsValid() && (!c.Address6.Is6() || c.Address6.Is4In6()) {
		return fmt.Errorf("address6 %v: not an IPv6 address (an IPv4 one goes in address)", c.Address6)
	}
	if c.XDPMode != "" && c.XDPMode != "driver" && c.XDPMode != "generic" {
		return fmt.Errorf("xdp_mode %q: must be driver or generic", c.XDPMode)
	}
	if len(c.Instances) == 0 {
		return errors.New("instances: none configured")
	}
	for name, a := range map[string]netip.Addr{"address": c.Address, "address6": c.Address6} {
		if a.IsValid() {
			if err := forwarding.CheckDIP(a); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	}
	names := map[string]bool{}
	claims := forwarding.NewClaims()
	for i := range c.Instances {
		in := &c.Instances[i]
		in.Strategy = in.Strategy.OrDefault() // as `ctl create` without --strategy
		if in.ChainWindow == 0 {
			in.ChainWindow = in.Strategy.Spec().StaticChainWindow
		}
		if err := in.Validate(); err != nil {
			return err
		}
		if names[in.Name] {
			return fmt.Errorf("instance %q configured twice", in.Name)
		}
		names[in.Name] = true
		if err := claims.AddInstance(&in.Instance); err != nil {
			return fmt.Errorf("instance %q: %w", in.Name, err)
		}
		if err := in.validateServers(c.Address, c.Address6); err != nil {
			return fmt.Errorf("instance %q: %w", in.Name, err)
		}
	}
	// Server addresses once every VIP is known, so that a server that is a
	// VIP of a later instance is caught too.
	for _, in := range c.Instances {
		for _, s := range in.Servers {
			if err := claims.AddDIP(in.Name, s.ID, s.Address); err != nil {
				return fmt.Errorf("instance %q: server %d: %w", in.Name, s.ID, err)
			}
		}
	}
	return nil
}

// validateServers checks the servers of one instance. mux and mux6 are the
// mux's own addresses, if the file gives them: a server at one of them
// would have the mux encapsulate packets to itself.
func (in *MuxInstance) validateServers(mux, mux6 netip.Addr) error {
	if len(in.Servers) == 0 {
		return errors.New("no servers")
	}
	if uint32(len(in.Servers)) >= in.Buckets {
		return fmt.Errorf("%d buckets for %d servers: B must be larger than the number of servers (e.g. 100×)", in.Buckets, len(in.Servers))
	}
	for _, v := range in.VIPs {
		if v == mux || v == mux6 {
			return fmt.Errorf("VIP %v is the mux's own address", v)
		}
	}
	ids, addrs := map[forwarding.ServerID]bool{}, map[netip.Addr]bool{}
	for _, s := range in.Servers {
		if err := in.CheckServer(s.ID, s.Address, s.weight()); err != nil {
			return fmt.Errorf("server %d: %w", s.ID, err)
		}
		if s.Address == mux || s.Address == mux6 {
			return fmt.Errorf("server %d: address %v is the mux's own address", s.ID, s.Address)
		}
		if ids[s.ID] || addrs[s.Address] {
			return fmt.Errorf("server %d (%v): id or address listed twice", s.ID, s.Address)
		}
		ids[s.ID], addrs[s.Address] = true, true
	}
	return nil
}

// Table builds the instance's forwarding table: servers in the id table,
// buckets spread by weight with the greedy balancing of pkg/controlplane/assign.
func (in *MuxInstance) Table() *forwarding.Table {
	t := forwarding.NewTable(int(in.Buckets))
	t.Generation = 1
	servers := make([]assign.Server, 0, len(in.Servers))
	for _, s := range in.Servers {
		w := s.weight()
		t.Servers[s.ID] = forwarding.Server{Addr: s.Address, State: forwarding.Active}
		servers = append(servers, assign.Server{ID: s.ID, Weight: w})
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	for _, c := range assign.Rebalance(t.Buckets, servers, 0) {
		t.Buckets[c.Index] = forwarding.Bucket{Current: c.Bucket.Current}
	}
	return t
}
