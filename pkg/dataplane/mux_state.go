package dataplane

import (
	"sort"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// InstanceState is what the kernel holds for one instance of the mux: the
// bucket counts are read back from the bucket array the XDP program reads
// (not from the table Go last wrote), so `beamer mux status` shows the
// data plane itself.
type InstanceState struct {
	Config      forwarding.Instance
	Incarnation uint32
	Generation  uint32
	// Owned counts, per current server id, the buckets whose kernel word
	// names it; NoServer counts unowned buckets.
	Owned map[forwarding.ServerID]int
	// Chained counts buckets whose word names a history (a chain reference).
	Chained int
	// Unowned counts buckets whose kernel word names no server of the
	// table (no owner, or an id the table lacks): the data path drops their
	// packets (drop reasons no_owner, unknown_server).
	Unowned int
	// Servers are the server ids and addresses of the table.
	Servers map[forwarding.ServerID]forwarding.Server
}

// State reads every instance's bucket words from the kernel, by name.
func (m *Mux) State() []InstanceState {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []InstanceState
	for name, in := range m.instances {
		s := InstanceState{Config: in.cfg, Incarnation: in.table.Incarnation, Generation: in.table.Generation,
			Owned: map[forwarding.ServerID]int{}, Servers: map[forwarding.ServerID]forwarding.Server{}}
		for i := range uint32(len(in.table.Buckets)) {
			w := in.buckets.get(i)
			s.Owned[forwarding.ServerID(uint16(w))]++
			if wordRef(w) != 0 {
				s.Chained++
			}
		}
		for id, sv := range in.table.Servers {
			s.Servers[id] = sv
		}
		for id, n := range s.Owned {
			if _, ok := in.table.Servers[id]; !ok {
				s.Unowned += n
			}
		}
		s.Config.Name = name
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Config.Name < out[j].Config.Name })
	return out
}
