package dataplane

import (
	"encoding/binary"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// A server enters the mux's tables of an instance as one word in its
// server table (server_tables, bpf/include/mux_maps.h), IPv4 and IPv6 alike, and for IPv6 as
// its whole address in the server6 array too (servers6.go). The writes
// are ordered — address, then word; on an address change, the word
// cleared and a grace period first — so that no packet uses a half-written
// server.

// serverWord is the server_tables word of s.
func serverWord(s forwarding.Server) uint64 {
	if is6(s.Addr) {
		a := s.Addr.As16()
		return uint64(binary.LittleEndian.Uint32(a[12:])) | uint64(s.State)<<32
	}
	return s.Pack()
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
