package dataplane

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
)

// The agent's IPv6 side (bpf/include/agent6.h): an IPv6 address of its
// own for GUE over IPv6, IPv6 VIPs in agent_vips6, IPv6 trusted prefixes in
// trusted_sources6. One family per VIP's instance: an IPv6 VIP needs
// Addr6, an IPv4 VIP needs Addr.

func checkAgentAddrs(opts AgentOptions) error {
	if !opts.Addr.IsValid() && !opts.Addr6.IsValid() {
		return fmt.Errorf("agent has no address: set its IPv4 address, its IPv6 address, or both")
	}
	if opts.Addr.IsValid() && (!opts.Addr.Is4() || opts.Addr.IsUnspecified()) {
		return fmt.Errorf("agent address %v is not a unicast IPv4 address", opts.Addr)
	}
	if opts.Addr6.IsValid() && (!is6(opts.Addr6) || !opts.Addr6.IsGlobalUnicast()) {
		return fmt.Errorf("agent IPv6 address %v is not a global unicast IPv6 address", opts.Addr6)
	}
	return nil
}

func checkAgentVIP(v netip.Addr, opts AgentOptions, twice bool) error {
	switch {
	case twice:
		return fmt.Errorf("VIP %v is listed twice", v)
	case v == opts.Addr || v == opts.Addr6:
		// Also when the address came from the interface, after the
		// configuration was checked: a VIP on lo equal to the DIP would
		// take the server's own address away from it.
		return fmt.Errorf("VIP %v is the server's own address (its DIP): a VIP must be an address of its own", v)
	case v.Is4() && !v.IsUnspecified():
		if !opts.Addr.IsValid() {
			return fmt.Errorf("IPv4 VIP %v needs the agent's IPv4 address", v)
		}
	case is6(v) && v.IsGlobalUnicast():
		if !opts.Addr6.IsValid() {
			return fmt.Errorf("IPv6 VIP %v needs the agent's IPv6 address (Addr6)", v)
		}
	default:
		return fmt.Errorf("VIP %v is not a unicast IPv4 or global unicast IPv6 address", v)
	}
	return nil
}

func setAgentAddrs(spec *ebpf.CollectionSpec, opts AgentOptions) error {
	if opts.Addr.IsValid() {
		if err := spec.Variables["local_addr"].Set(opts.Addr.As4()); err != nil {
			return err
		}
	}
	if opts.Addr6.IsValid() {
		if err := spec.Variables["local_addr6"].Set(opts.Addr6.As16()); err != nil {
			return err
		}
	}
	return nil
}

// addr6Words is an IPv6 address as four words whose memory holds its
// bytes in network order (the __be32[4] of the BPF key).
func addr6Words(a netip.Addr) [4]uint32 {
	b := a.As16()
	var w [4]uint32
	for i := range w {
		w[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return w
}
