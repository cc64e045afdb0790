package model

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/model/modelspi"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// packet is what a strategy's decision reads of a packet to a service port
// (or, for strategies that want them, a port above 1024).
type packet struct {
	flow wire.Flow
	syn  bool   // SYN without ACK: a new connection
	tcp  []byte // the TCP header with its options (strategies that read options); nil for UDP
	udp  []byte // the UDP header and payload; nil for TCP
}

// strategy is one forwarding strategy of the reference mux, mirroring its
// bpf/strategy/NAME.h: the server for the packet and the option to carry
// (nil: none), with the verdict counter; ok false means drop, counted by
// counter. Each strategy is one type in its own file (strategy_NAME.go),
// or in its own package registered in modelspi (pkg/strategy/NAME).
type strategy interface {
	decide(m *Mux, vip *VIP, p packet) (server forwarding.Server, opt *wire.Option, counter string, ok bool)
}

var strategies = map[forwarding.Strategy]strategy{}

func registerStrategy(name forwarding.Strategy, s strategy) { strategies[name] = s }

// strategyNamed is the strategy registered here or in modelspi.
func strategyNamed(name forwarding.Strategy) (strategy, bool) {
	if s, ok := strategies[name]; ok {
		return s, true
	}
	if s, ok := modelspi.Lookup(name); ok {
		return spiStrategy{s}, true
	}
	return nil, false
}

// spiStrategy is a strategy of its own package seen through this
// package's interface, which the strategies still written here share.
type spiStrategy struct{ s modelspi.Strategy }

func (a spiStrategy) decide(m *Mux, vip *VIP, p packet) (forwarding.Server, *wire.Option, string, bool) {
	return a.s.Decide(spiMux{m}, vip, modelspi.Packet{Flow: p.flow, SYN: p.syn, TCP: p.tcp, UDP: p.udp})
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

// owner is the bucket (or table entry) of flow and its current server, or
// the drop counter when there is none.
func owner(vip *VIP, flow wire.Flow) (forwarding.Bucket, forwarding.Server, string, bool) {
	return modelspi.Owner(vip, flow)
}
