package model

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// awfdStrategy mirrors bpf/strategy/awfd.h: a known 5-tuple (SYNs
// included) to its remembered server while it is not down; a new one (miss or stale)
// by Algorithm 1 on the VIP's class record (awfd.Record.Select), falling
// back to the Maglev table when there is no record, no class, or the
// picked server is not active; the choice remembered.
type awfdStrategy struct{}

func init() { registerStrategy(forwarding.StrategyAWFD, awfdStrategy{}) }

func (awfdStrategy) decide(m *Mux, vip *VIP, p packet) (forwarding.Server, *wire.Option, string, bool) {
	if m.ConnTrack == nil {
		m.ConnTrack = map[wire.Flow]forwarding.ServerID{}
	}
	counter := "ct_miss"
	if p.syn {
		counter = "ct_syn"
	}
	// SYNs look too: a retransmitted SYN keeps its first server.
	if id, ok := m.ConnTrack[p.flow]; ok {
		if s, ok := vip.Table.Servers[id]; ok && s.State != forwarding.Down {
			return s, nil, "ct_hit", true
		}
		counter = "ct_stale"
	}
	id := forwarding.NoServer
	if vip.AWFD != nil {
		id = vip.AWFD.Select(p.flow.Hash())
		if s, ok := vip.Table.Servers[id]; id != forwarding.NoServer && (!ok || s.State != forwarding.Active) {
			id = forwarding.NoServer
		}
	}
	if id == forwarding.NoServer {
		e, _, why, ok := owner(vip, p.flow)
		if !ok {
			return forwarding.Server{}, nil, why, false
		}
		id = e.Current
	}
	if m.InsertBudget == nil || *m.InsertBudget > 0 {
		m.ConnTrack[p.flow] = id
		if m.InsertBudget != nil {
			*m.InsertBudget--
		}
	}
	return vip.Table.Servers[id], nil, counter, true
}
