package model

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
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
// counter. Each strategy is one type in its own file (strategy_NAME.go).
type strategy interface {
	decide(m *Mux, vip *VIP, p packet) (server forwarding.Server, opt *wire.Option, counter string, ok bool)
}

var strategies = map[forwarding.Strategy]strategy{}

func registerStrategy(name forwarding.Strategy, s strategy) { strategies[name] = s }

// owner is the bucket (or table entry) of flow and its current server, or
// the drop counter when there is none.
func owner(vip *VIP, flow wire.Flow) (forwarding.Bucket, forwarding.Server, string, bool) {
	b := vip.Table.Buckets[flow.Bucket(uint32(len(vip.Table.Buckets)))]
	if b.Current == forwarding.NoServer {
		return b, forwarding.Server{}, "drop_no_owner", false
	}
	s, ok := vip.Table.Servers[b.Current]
	if !ok {
		return b, forwarding.Server{}, "drop_unknown_server", false
	}
	return b, s, "", true
}
