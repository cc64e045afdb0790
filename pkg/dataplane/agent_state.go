package dataplane

import (
	"fmt"
	"net/netip"
	"sort"
	"time"
)

// AgentVIPState is one VIP as the agent's program holds it, read back from
// the kernel's VIP map, with the newest (incarnation, generation) it has
// seen from a mux for that VIP.
type AgentVIPState struct {
	VIP         netip.Addr
	Buckets     uint32
	Window      time.Duration
	Incarnation uint32
	Generation  uint32
}

// VIPState reads the VIPs from the kernel.
func (a *Agent) VIPState() ([]AgentVIPState, error) {
	var key [4]byte
	var rec agentAgentVip
	var out []AgentVIPState
	it := a.objs.AgentVips.Iterate()
	for it.Next(&key, &rec) {
		e := a.NewestSeen(int(rec.Slot))
		out = append(out, AgentVIPState{VIP: netip.AddrFrom4(key), Buckets: rec.Buckets, Window: time.Duration(rec.Window) * time.Second,
			Incarnation: uint32(e >> 32), Generation: uint32(e)})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading the agent's VIPs: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VIP.Less(out[j].VIP) })
	return out, nil
}
