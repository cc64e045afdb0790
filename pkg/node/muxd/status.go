package muxd

import (
	"sort"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Status is what this mux's data plane holds (`beamer mux status`, GET
// /status on the metrics address). Field names are documented in
// docs/operations.md.
type Status struct {
	Role      string           `json:"role"` // "mux"
	Interface string           `json:"interface"`
	Address   string           `json:"address"`
	Address6  string           `json:"address6,omitempty"` // IPv6 outer source and BGP next hop, if any
	Instances []InstanceStatus `json:"instances"`
	// Counters are the XDP program's decision counters (packets).
	Counters map[string]uint64 `json:"counters"`
}

// InstanceStatus is one instance as the kernel holds it.
type InstanceStatus struct {
	Name           string         `json:"name"`
	Strategy       string         `json:"strategy"`
	VIPs           []string       `json:"vips"`
	PortLow        uint16         `json:"port_low"`
	PortHigh       uint16         `json:"port_high"`
	Ports          string         `json:"ports"` // every protocol and range, and the server-id range
	Incarnation    uint32         `json:"incarnation"`
	Generation     uint32         `json:"generation"`
	Buckets        int            `json:"buckets"`
	UnownedBuckets int            `json:"unowned_buckets"`
	ChainedBuckets int            `json:"chained_buckets"` // buckets with a history in their option
	Servers        []ServerStatus `json:"servers"`
}

// ServerStatus is one server of an instance and the buckets the kernel's
// bucket array gives it.
type ServerStatus struct {
	ID      uint16 `json:"id"`
	Address string `json:"address"`
	State   string `json:"state"` // active, or retired (kept for daisy chaining)
	Buckets int    `json:"buckets"`
}

// Status reads the data plane.
func (d *Daemon) Status() (*Status, error) {
	c, err := d.mux.Counters()
	if err != nil {
		return nil, err
	}
	s := &Status{Role: "mux", Interface: d.opts.Interface, Counters: c, Instances: []InstanceStatus{}}
	if d.opts.Address.IsValid() {
		s.Address = d.opts.Address.String()
	}
	if d.opts.Address6.IsValid() {
		s.Address6 = d.opts.Address6.String()
	}
	for _, in := range d.mux.State() {
		is := InstanceStatus{Name: in.Config.Name, Strategy: string(in.Config.Strategy), PortLow: in.Config.PortLow, PortHigh: in.Config.PortHigh, Ports: in.Config.PortSummary(),
			Incarnation: in.Incarnation, Generation: in.Generation, UnownedBuckets: in.Owned[forwarding.NoServer], ChainedBuckets: in.Chained,
			Servers: []ServerStatus{}}
		for _, v := range in.Config.VIPs {
			is.VIPs = append(is.VIPs, v.String())
		}
		for _, n := range in.Owned {
			is.Buckets += n
		}
		for id, sv := range in.Servers {
			state := "active"
			if sv.State == forwarding.Retired {
				state = "retired"
			}
			is.Servers = append(is.Servers, ServerStatus{ID: uint16(id), Address: sv.Addr.String(), State: state, Buckets: in.Owned[id]})
		}
		sort.Slice(is.Servers, func(i, j int) bool { return is.Servers[i].ID < is.Servers[j].ID })
		s.Instances = append(s.Instances, is)
	}
	return s, nil
}
