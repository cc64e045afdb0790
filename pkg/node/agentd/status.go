package agentd

import (
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/dataplane"
)

// Status is what this server's agent holds (`beamer agent status`, GET
// /status on the metrics address); docs/operations.md.
type Status struct {
	Role      string      `json:"role"` // "agent"
	Interface string      `json:"interface"`
	ServerID  uint16      `json:"server_id"`
	VIPs      []VIPStatus `json:"vips"`
	// Counters are the tc program's decision counters (packets).
	Counters map[string]uint64 `json:"counters"`
}

// VIPStatus is one VIP as the kernel's map holds it, with the newest
// (incarnation, generation) a mux's packets carried (0 before any).
type VIPStatus struct {
	VIP                string  `json:"vip"`
	Buckets            uint32  `json:"buckets"`
	ChainWindowSeconds float64 `json:"chain_window_seconds"`
	Incarnation        uint32  `json:"newest_incarnation"`
	Generation         uint32  `json:"newest_generation"`
	// Traffic received for the VIP since the agent started (with
	// --metrics only, else absent): bpf/vipstats.c.
	Traffic *dataplane.VIPTraffic `json:"traffic,omitempty"`
}

// Status reads the data plane.
func (d *Daemon) Status() (*Status, error) {
	c, err := d.agent.Counters()
	if err != nil {
		return nil, err
	}
	vs, err := d.agent.VIPState()
	if err != nil {
		return nil, err
	}
	s := &Status{Role: "agent", Interface: d.cfg.Interface, ServerID: uint16(d.cfg.ServerID), Counters: c, VIPs: []VIPStatus{}}
	var traffic map[netip.Addr]dataplane.VIPTraffic
	if d.vipStats != nil {
		if traffic, err = d.vipStats.Read(); err != nil {
			return nil, err
		}
	}
	for _, v := range vs {
		st := VIPStatus{VIP: v.VIP.String(), Buckets: v.Buckets, ChainWindowSeconds: v.Window.Seconds(),
			Incarnation: v.Incarnation, Generation: v.Generation}
		if t, ok := traffic[v.VIP]; ok {
			st.Traffic = &t
		}
		s.VIPs = append(s.VIPs, st)
	}
	return s, nil
}
