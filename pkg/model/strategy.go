package model

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// decide is the decision of vip's strategy on p: each strategy mirrors its
// bpf/strategy/NAME.h from its own package (pkg/strategy/NAME/model.go),
// registered in modelspi. ok false means drop, counted by counter.
func decide(strat modelspi.Strategy, m *Mux, vip *VIP, p modelspi.Packet) (forwarding.Server, *wire.Option, string, bool) {
	return strat.Decide(spiMux{m}, vip, p)
}

// spiMux is the mux's state a strategy keeps (modelspi.Mux).
type spiMux struct{ m *Mux }

func (h spiMux) Conns() map[wire.Flow]forwarding.ServerID {
	if h.m.ConnTrack == nil {
		h.m.ConnTrack = map[wire.Flow]forwarding.ServerID{}
	}
	return h.m.ConnTrack
}

func (h spiMux) TakeInsert() bool {
	if h.m.InsertBudget == nil {
		return true
	}
	if *h.m.InsertBudget <= 0 {
		return false
	}
	*h.m.InsertBudget--
	return true
}

func (h spiMux) RoundRobin(instance string, n int) int {
	if h.m.RoundRobin == nil {
		h.m.RoundRobin = map[string]int{}
	}
	i := h.m.RoundRobin[instance] % n
	h.m.RoundRobin[instance] = i + 1
	return i
}

func (h spiMux) Learned(sig uint64) (forwarding.ServerID, bool) {
	id, ok := h.m.PrismLearned[sig]
	return id, ok
}

func (h spiMux) Learn(sig uint64, id forwarding.ServerID) {
	if h.m.PrismLearned == nil {
		h.m.PrismLearned = map[uint64]forwarding.ServerID{}
	}
	h.m.PrismLearned[sig] = id
}
