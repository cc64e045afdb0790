package beamer

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// modelDecision mirrors bpf/strategy/beamer.h: service ports go to the
// bucket's owner with the bucket's history in the option (for UDP, the
// owner itself ends the list). The server-id range is the model's (pkg/model/route.go).
type modelDecision struct{}

func init() { modelspi.Register(forwarding.StrategyBeamer, modelDecision{}) }

func (modelDecision) Decide(_ modelspi.Mux, vip *modelspi.VIP, p modelspi.Packet) (forwarding.Server, *wire.Option, string, bool) {
	b, server, why, ok := modelspi.Owner(vip, p.Flow)
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
		if p.Flow.Proto == wire.ProtoUDP {
			opt.Prev = append(opt.Prev[:min(len(opt.Prev), wire.MaxPrev-1)], server.Addr)
			opt.Flags = wire.FlagReturn
		}
	}
	return server, opt, "fwd_bucket", true
}
