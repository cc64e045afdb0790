package awfd

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// modelDecision mirrors bpf/strategy/awfd.h: a known 5-tuple (SYNs
// included) to its remembered server while it is not down; a new one (miss or stale)
// by Algorithm 1 on the VIP's class record (classes.Record.Select), falling
// back to the Maglev table when there is no record, no class, or the
// picked server is not active; the choice remembered.
type modelDecision struct{}

func init() { modelspi.Register(forwarding.StrategyAWFD, modelDecision{}) }

func (modelDecision) Decide(m modelspi.Mux, vip *modelspi.VIP, p modelspi.Packet) (forwarding.Server, *wire.Option, string, bool) {
	conns := m.Conns()
	counter := "ct_miss"
	if p.SYN {
		counter = "ct_syn"
	}
	// SYNs look too: a retransmitted SYN keeps its first server.
	if id, ok := conns[p.Flow]; ok {
		if s, ok := vip.Table.Servers[id]; ok && s.State != forwarding.Down {
			return s, nil, "ct_hit", true
		}
		counter = "ct_stale"
	}
	id := forwarding.NoServer
	if vip.AWFD != nil {
		id = vip.AWFD.Select(p.Flow.Hash())
		if s, ok := vip.Table.Servers[id]; id != forwarding.NoServer && (!ok || s.State != forwarding.Active) {
			id = forwarding.NoServer
		}
	}
	if id == forwarding.NoServer {
		e, _, why, ok := modelspi.Owner(vip, p.Flow)
		if !ok {
			return forwarding.Server{}, nil, why, false
		}
		id = e.Current
	}
	if m.TakeInsert() {
		conns[p.Flow] = id
	}
	return vip.Table.Servers[id], nil, counter, true
}
