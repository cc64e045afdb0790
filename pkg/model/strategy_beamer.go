package model

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// beamerStrategy mirrors bpf/strategy/beamer.h: ports above 1024 name the
// server (MPTCP subflows); service ports go to the bucket's owner with the
// bucket's history in the option.
type beamerStrategy struct{}

func init() { registerStrategy(forwarding.StrategyBeamer, beamerStrategy{}) }

func (beamerStrategy) decide(m *Mux, vip *VIP, p packet) (forwarding.Server, *wire.Option, string, bool) {
	if p.flow.DstPort > forwarding.MaxServicePort {
		s, ok := vip.Table.Servers[forwarding.ServerID(p.flow.DstPort)]
		if !ok {
			return s, nil, "drop_unknown_server", false
		}
		return s, nil, "fwd_server_id", true
	}
	b, server, why, ok := owner(vip, p.flow)
	if !ok {
		return server, nil, why, false
	}
	opt := &wire.Option{Generation: vip.Generation, Incarnation: vip.Incarnation}
	for _, id := range b.History[:b.History.Len()] {
		prev, ok := vip.Table.Servers[id]
		if !ok {
			break // cannot happen in a valid table; the C program stops there too
		}
		opt.Prev = append(opt.Prev, prev.Addr)
	}
	if len(opt.Prev) > 0 {
		opt.Changed = b.Changed
	}
	return server, opt, "fwd_bucket", true
}
