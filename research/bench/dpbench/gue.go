package dpbench

import (
	"net"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
)

// gueMuxRows measures the Beamer mux with the instance's encap set to GUE
// (bpf/include/gue.h), beside the IP-in-IP rows on the same table: the
// first size, a bucket that never moved and one that moved once. The path
// is verified by fwd_gue (counted only when the packet left in GUE), so a
// baseline built before GUE shows as another path, not a figure to compare.
func gueMuxRows(r *rig, o Options, ctx func([]byte) any, add func(string, int, int, trial, string) error) error {
	b := o.BeamerBuckets[0]
	for _, moved := range []int{0, 1} {
		cfg, table := beamerInstance(b, moved)
		cfg.Encap = forwarding.EncapGUE
		m, err := loadMux(cfg, table, 0, o)
		if err != nil {
			return err
		}
		if err := setBenchFlows(m, o.BeamerFlows); err != nil {
			m.Close()
			return err
		}
		ack := frame(beamerVIP, 80, wiretest.ACK)
		t := trial{ns: r.ns, frame: ack, ctx: ctx(ack), want: xdpTX, repeat: o.Repeat, read: m.Counters, packets: o.PerPacket,
			prog: m.BenchProgram(), counter: "fwd_gue", base: m.baseBench(), baseSingle: m.baseProgram(), single: m.Program(),
			frameAt: rotating(beamerVIP, 80, wiretest.ACK, o.BeamerFlows)}
		name, what := "beamer-gue", "GUE (UDP port 6080, source port from the flow hash), no bucket ever moved: 48-byte outer headers"
		if moved > 0 {
			name, what = "beamer-gue-moved1", "GUE, every bucket moved once: one previous owner in the private data"
		}
		err = add(name, o.BeamerFlows, int(b), t, "test run, repeat; each repetition a new flow, encapsulation undone after it; "+what)
		m.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// gueAgentRows measures the agent on GUE packets (default port) beside its
// IP-in-IP rows, on the same agent and connection: the tc fast path, the XDP
// fast path and a chained packet (which leaves in GUE).
func gueAgentRows(ns *netlab.Namespace, a *benchAgent, ifindex int, o Options, add func(string, int, int, trial, string) error) error {
	now := time.Now()
	encap := func(sport uint16, opt *wire.Option) []byte {
		f := wire.Flow{Src: clientAddr, Dst: beamerVIP, SrcPort: sport, DstPort: 80, Proto: wire.ProtoTCP}
		inner := wiretest.Segment{Flow: f, Flags: wiretest.ACK, Seq: 1, Ack: 1}.IPv4()
		outer, err := wire.EncapsulateGUE(inner, muxAddr, agentAddr, wire.GUESourcePort(f.Hash()), wire.GUEDefaultPort, opt)
		if err != nil {
			panic(err)
		}
		return wiretest.Frame(wiretest.MuxMAC, net.HardwareAddr{2, 0xbe, 0xa0, 0, 0, 0x11}, outer)
	}
	steady := encap(41000, &wire.Option{Generation: 5})
	moved := encap(42000, &wire.Option{Prev: []netip.Addr{prevAddr}, Changed: uint32(now.Unix() - 10), Generation: 5})
	tcCtx := skbContext(ifindex)
	xdpCtx := func(f []byte) any { return xdpMD{DataEnd: uint32(len(f)), IngressIfindex: uint32(ifindex)} }
	rows := []struct {
		name, counter, method string
		t                     trial
	}{
		{"agent-local-gue", "to_stack", "GUE: packet of a local connection whose bucket has not moved, decapsulated in tc (restored after each run)",
			trial{prog: a.BenchProgram(), single: a.Program(), frame: steady, ctx: tcCtx, want: tcOK}},
		{"agent-chain-gue", "chained", "GUE: stray packet in the chaining window, chained on in GUE (restored after each run)",
			trial{prog: a.BenchProgram(), single: a.Program(), frame: moved, ctx: tcCtx, want: tcRedirect}},
		{"agent-xdp-local-gue", "xdp_decap", "GUE: the XDP fast path's common case, decapsulated in XDP (restored after each run)",
			trial{prog: a.XDPBenchProgram(), single: a.XDPProgram(), frame: steady, ctx: xdpCtx(steady), want: xdpPass}},
	}
	for _, r := range rows {
		t := r.t
		t.ns, t.repeat, t.packets, t.read, t.counter = ns, o.Repeat, o.PerPacket, a.Counters, r.counter
		if err := add(r.name, 1, 0, t, "test run, repeat; "+r.method); err != nil {
			return err
		}
	}
	return nil
}
