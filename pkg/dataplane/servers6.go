package dataplane

import (
	"encoding/binary"
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
// the order below (address, then word; on an address change, the word
// cleared and a grace period first) never lets a packet use a half-written
// address.

func is6(a netip.Addr) bool { return a.Is6() && !a.Is4In6() }

// serverWord is the server_tables word of s.
func serverWord(s forwarding.Server) uint64 {
	if is6(s.Addr) {
		a := s.Addr.As16()
		return uint64(binary.LittleEndian.Uint32(a[12:])) | uint64(s.State)<<32
	}
	return s.Pack()
}

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

// storeServer writes server id's word (and, for IPv6, its address first).
// An IPv6 id whose address changes in place is cleared and a grace period
// waited before the new address is written.
func (in *muxInstance) storeServer(id forwarding.ServerID, s forwarding.Server, grace func() error) error {
	w, err := in.serverWordCounted(id, s) // mux_traffic.go
	if err != nil {
		return err
	}
	if !is6(s.Addr) {
		in.servers.store(uint32(id), w)
		return nil
	}
	if in.servers6 == nil {
		return fmt.Errorf("dataplane: server %d has IPv6 address %v in an IPv4 instance %q", id, s.Addr, in.cfg.Name)
	}
	if old, ok := in.table.Servers[id]; ok && old.Addr != s.Addr && in.servers.load(uint32(id)) != 0 {
		in.servers.store(uint32(id), 0)
		if err := grace(); err != nil {
			return err
		}
	}
	if err := in.servers6.Put(uint32(id), s.Addr.As16()); err != nil {
		return fmt.Errorf("dataplane: writing the address of server %d: %w", id, err)
	}
	in.servers.store(uint32(id), w)
	return nil
}
