// Package modelspi is the reference model's strategy interface: a
// strategy's decision in Go, mirroring its bpf/strategy/NAME.h, and the
// registry a strategy's own package (pkg/strategy/NAME) adds itself to in
// init().
//
// It imports no layer: a strategy package imports it, never pkg/model, so
// the model's own tests can load every strategy (pkg/strategy/all) without
// an import cycle.
package modelspi

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// Packet is what a strategy's decision reads of a packet to a service
// port (or, for strategies that want them, a port above 1024).
type Packet struct {
	Flow wire.Flow
	SYN  bool   // SYN without ACK: a new connection
	TCP  []byte // the TCP header with its options (strategies that read options); nil for UDP
	UDP  []byte // the UDP header and payload; nil for TCP
}

// VIP is one VIP as the mux sees it (model.VIP).
type VIP struct {
	Instance    forwarding.Instance
	Table       *forwarding.Table
	Generation  uint32 // published generation (the VIP record's)
	Incarnation uint32 // the table's incarnation (the VIP record's)
	// AWFD is the class record an awfd VIP dispatches new connections by
	// (nil: none loaded yet).
	AWFD *classes.Record
}

// Mux is the reference mux's state a strategy keeps across packets.
type Mux interface {
	// Conns is the connection table of the connection-keeping strategies
	// (Maglev's, AWFD's), made on first use; see model.Mux.ConnTrack.
	Conns() map[wire.Flow]forwarding.ServerID
	// TakeInsert tells whether the flood guard lets the connection table
	// take one more entry, and counts it when it does.
	TakeInsert() bool
	// RoundRobin is the position of instance's round robin over n servers
	// (Cheetah's rr policy, one CPU's), advanced by one.
	RoundRobin(instance string, n int) int
	// Learned and Learn are Prism's SYN-learning table of this mux
	// (signature -> server), filled by SYNs in migrating bins.
	Learned(sig uint64) (forwarding.ServerID, bool)
	Learn(sig uint64, id forwarding.ServerID)
}

// Strategy is one forwarding strategy of the reference mux: the server for
// the packet and the option to carry (nil: none), with the verdict
// counter; ok false means drop, counted by counter.
type Strategy interface {
	Decide(m Mux, vip *VIP, p Packet) (server forwarding.Server, opt *wire.Option, counter string, ok bool)
}

// Owner is the bucket (or table entry) of flow and its current server, or
// the drop counter when there is none.
func Owner(vip *VIP, flow wire.Flow) (forwarding.Bucket, forwarding.Server, string, bool) {
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

// registry holds each strategy's decision.
var registry = forwarding.NewRegistry[Strategy]("modelspi")

// Register adds name's decision; a strategy package calls it from init().
func Register(name forwarding.Strategy, s Strategy) { registry.Register(name, s) }

// Lookup is the registered decision of name.
func Lookup(name forwarding.Strategy) (Strategy, bool) { return registry.Lookup(name) }
