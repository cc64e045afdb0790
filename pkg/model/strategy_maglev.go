package model

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// maglevStrategy mirrors bpf/strategy/maglev.h: the remembered server of a
// known connection while it is not down, else the Maglev table's entry,
// remembered (Mux.ConnTrack: without the kernel table's evictions).
type maglevStrategy struct{}

func init() { registerStrategy(forwarding.StrategyMaglev, maglevStrategy{}) }

func (maglevStrategy) decide(m *Mux, vip *VIP, p packet) (forwarding.Server, *wire.Option, string, bool) {
	if m.ConnTrack == nil {
		m.ConnTrack = map[wire.Flow]forwarding.ServerID{}
	}
	counter := "ct_miss"
	if p.syn {
		counter = "ct_syn"
	} else if id, ok := m.ConnTrack[p.flow]; ok {
		if s, ok := vip.Table.Servers[id]; ok && s.State != forwarding.Down {
			return s, nil, "ct_hit", true
		}
		counter = "ct_stale"
	}
	e, s, why, ok := owner(vip, p.flow)
	if !ok {
		return s, nil, why, false
	}
	if m.InsertBudget == nil || *m.InsertBudget > 0 {
		m.ConnTrack[p.flow] = e.Current
		if m.InsertBudget != nil {
			*m.InsertBudget--
		}
	}
	return s, nil, counter, true
}
