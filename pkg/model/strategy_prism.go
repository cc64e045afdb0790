package model

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// prismStrategy mirrors bpf/strategy/prism.h: ports above 1024 name the
// server (MPTCP secondary subflows, as under beamer); else the MCT entry of the packet's
// signature (its keep-alive bit is the kernel's business), else the server
// this mux remembered since the connection's SYN in a migrating bin, else
// the bin's owner; no option. (The kernel's remembered entries expire after
// 60 s; the model's do not.)
type prismStrategy struct{}

func init() { registerStrategy(forwarding.StrategyPrism, prismStrategy{}) }

func (prismStrategy) decide(m *Mux, vip *VIP, p packet) (forwarding.Server, *wire.Option, string, bool) {
	// The server-id range is route's, for every strategy (route.go).
	if id, ok := vip.Table.MCT[p.flow.Signature()]; ok {
		if s, ok := vip.Table.Servers[id]; ok {
			return s, nil, "prism_mct_hit", true
		}
	}
	sig := p.flow.Signature()
	if id, ok := m.PrismLearned[sig]; ok && !p.syn {
		if s, ok := vip.Table.Servers[id]; ok {
			return s, nil, "prism_learned_hit", true
		}
	}
	b, s, why, ok := owner(vip, p.flow)
	if !ok {
		return s, nil, why, false
	}
	if p.syn && b.Changed != 0 {
		// A SYN in a bin about to move: remembered by this mux.
		if m.PrismLearned == nil {
			m.PrismLearned = map[uint64]forwarding.ServerID{}
		}
		m.PrismLearned[sig] = b.Current
	}
	return s, nil, "prism_mct_miss", true
}
