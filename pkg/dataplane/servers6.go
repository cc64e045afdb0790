package dataplane

import (
	"fmt"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// IPv6 servers in the mux (bpf/include/vips6.h): the server word keeps
// its IPv4 shape — bits 0-31 four address bytes as the packet holds them,
// bits 32-39 the state — with the address's last four bytes, and the whole
// address sits by server id in the instance's server6 array. The program
// sends to the address only when its last word matches the server word, so
// the order storeServer writes them in (mux_servers.go) never lets a packet
// use a half-written address.

func is6(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }

// family6 tells whether an instance is IPv6 (one family per instance,
// checked by forwarding.Instance.Validate).
func family6(cfg forwarding.Instance) bool { return cfg.Family() == forwarding.IPv6 }

func newServer6Array() (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 16, MaxEntries: uint32(muxLimit().serverTable),
		Flags: unix.BPF_F_INNER_MAP})
	if err != nil {
		return nil, fmt.Errorf("creating the IPv6 server array: %w", err)
	}
	return m, nil
}
