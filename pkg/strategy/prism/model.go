package prism

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// modelDecision mirrors bpf/strategy/prism.h: ports above 1024 name the
// server (MPTCP secondary subflows, as under beamer); else the MCT entry of the packet's
// signature (its keep-alive bit is the kernel's business), else the server
// this mux remembered since the connection's SYN in a migrating bin, else
// the bin's owner; no option. (The kernel's remembered entries expire after
// 60 s; the model's do not.)
type modelDecision struct{}

func init() { modelspi.Register(forwarding.StrategyPrism, modelDecision{}) }

func (modelDecision) Decide(m modelspi.Mux, vip *modelspi.VIP, p modelspi.Packet) (forwarding.Server, *wire.Option, string, bool) {
	// The server-id range is the model's, for every strategy (pkg/model/route.go).
	if id, ok := vip.Table.MCT[p.Flow.Signature()]; ok {
		if s, ok := vip.Table.Servers[id]; ok {
			return s, nil, "prism_mct_hit", true
		}
	}
	sig := p.Flow.Signature()
	if id, ok := m.Learned(sig); ok && !p.SYN {
		if s, ok := vip.Table.Servers[id]; ok {
			return s, nil, "prism_learned_hit", true
		}
	}
	b, s, why, ok := modelspi.Owner(vip, p.Flow)
	if !ok {
		return s, nil, why, false
	}
	if p.SYN && b.Changed != 0 {
		// A SYN in a bin about to move: remembered by this mux.
		m.Learn(sig, b.Current)
	}
	return s, nil, "prism_mct_miss", true
}
