package model

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// prismStrategy mirrors bpf/strategy/prism.h: the MCT entry of the packet's
// signature (its keep-alive bit is the kernel's business), else the bin's
// owner; no option.
type prismStrategy struct{}

func init() { registerStrategy(forwarding.StrategyPrism, prismStrategy{}) }

func (prismStrategy) decide(m *Mux, vip *VIP, p packet) (forwarding.Server, *wire.Option, string, bool) {
	if id, ok := vip.Table.MCT[p.flow.Signature()]; ok {
		if s, ok := vip.Table.Servers[id]; ok {
			return s, nil, "prism_mct_hit", true
		}
	}
	_, s, why, ok := owner(vip, p.flow)
	if !ok {
		return s, nil, why, false
	}
	return s, nil, "prism_mct_miss", true
}
