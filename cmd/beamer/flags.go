package main

import (
	"fmt"
	"net/netip"
)

// parseAddrFlag reads an optional IPv4 address flag: the zero Addr when the
// flag was not given.
func parseAddrFlag(name, value string) (netip.Addr, error) {
	if value == "" {
		return netip.Addr{}, nil
	}
	a, err := netip.ParseAddr(value)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("--%s: %w", name, err)
	}
	return a, nil
}
