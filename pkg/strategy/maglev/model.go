package maglev

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// modelDecision mirrors bpf/strategy/maglev.h: the remembered server of a
// known connection while it is not down, else the Maglev table's entry,
// remembered (model.Mux.ConnTrack: without the kernel table's evictions).
type modelDecision struct{}

func init() { modelspi.Register(forwarding.StrategyMaglev, modelDecision{}) }

func (modelDecision) Decide(m modelspi.Mux, vip *modelspi.VIP, p modelspi.Packet) (forwarding.Server, *wire.Option, string, bool) {
	conns := m.Conns()
	counter := "ct_miss"
	if p.SYN {
		counter = "ct_syn"
	} else if id, ok := conns[p.Flow]; ok {
		if s, ok := vip.Table.Servers[id]; ok && s.State != forwarding.Down {
			return s, nil, "ct_hit", true
		}
		counter = "ct_stale"
	}
	e, s, why, ok := modelspi.Owner(vip, p.Flow)
	if !ok {
		return s, nil, why, false
	}
	if m.TakeInsert() {
		conns[p.Flow] = e.Current
	}
	return s, nil, counter, true
}
