package dpbench

import (
	"net"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/cilium/ebpf"
)

var cheetahVIP = netip.MustParseAddr("198.18.100.3")

// benchKeys are fixed so that runs are comparable; any key costs the same.
var benchKeys = cookie.Keys{Keys: [2]cookie.Key{{0x01234567, 0x89abcdef, 0xfedcba98, 0x76543210}, {1, 2, 3, 4}}}

// cheetahMuxRows measures the Cheetah mux beside Beamer's rows: a segment
// whose echo carries a valid cookie (decode: option parse, keyed hash,
// server word) in the common and in the general option layout, a SYN
// picked by round robin, and a segment without timestamps (the Beamer
// bucket fallback).
func cheetahMuxRows(r *rig, o Options, ctx func([]byte) any, add func(string, int, int, trial, string) error) error {
	t := forwarding.NewTable(1000)
	var backends []assign.Server
	t.Servers, backends = serverSet()
	for _, c := range assign.Rebalance(t.Buckets, backends, 0) {
		t.Buckets[c.Index] = forwarding.Bucket{Current: c.Bucket.Current}
	}
	t.Generation = 1
	cfg := forwarding.Instance{Name: "cheetah", Strategy: forwarding.StrategyCheetah, VIPs: []netip.Addr{cheetahVIP},
		PortLow: 80, PortHigh: 80, Buckets: 1000, ChainWindow: forwarding.DefaultChainWindow,
		Cheetah: &forwarding.CheetahOptions{Policy: forwarding.CheetahRR, Keys: benchKeys}}
	m, err := loadMux(cfg, t, 0, o)
	if err != nil {
		return err
	}
	defer m.Close()
	client := netip.AddrPortFrom(netip.MustParseAddr("198.19.0.1"), 1024)
	vip := netip.AddrPortFrom(cheetahVIP, 80)
	flow := wire.Flow{Src: client.Addr(), Dst: cheetahVIP, SrcPort: client.Port(), DstPort: 80, Proto: wire.ProtoTCP}
	tsecr := cookie.TSval(0x12345678, benchKeys.Encode(1030, 0, flow), false)
	rows := []struct {
		name, counter, what string
		seg                 []byte
	}{
		{"cheetah-cookie", "fwd_server_id", "echo with a valid cookie, NOP NOP TS: keyed hash, decode, server word (one flow: no per-flow table)",
			wiretest.TSSegment(client, vip, false, true, 1, tsecr, false)},
		{"cheetah-cookie-general", "fwd_server_id", "the same, options MSS SACK-OK TS NOP WS: general parse (bpf_loop)",
			wiretest.TSSegment(client, vip, false, true, 1, tsecr, true)},
		{"cheetah-syn-rr", "fwd_server_id", "SYN with timestamps (Linux layout, general parse): round robin, per-CPU position",
			wiretest.TSSegment(client, vip, true, false, 1, 0, true)},
		{"cheetah-fallback", "fwd_bucket", "no timestamp option: the Beamer bucket path",
			wiretest.Segment{Flow: flow, Flags: wiretest.ACK, Seq: 1, Ack: 1, Payload: []byte("xxxxxx")}.IPv4()},
	}
	for _, row := range rows {
		f := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, row.seg)
		tr := trial{ns: r.ns, prog: m.BenchProgram(), frame: f, ctx: ctx(f), want: xdpTX, repeat: o.Repeat, counter: row.counter, read: m.Counters,
			base: m.baseBench(), baseSingle: m.baseProgram(), single: m.Program(), packets: o.PerPacket}
		if err := add(row.name, 1, 1000, tr, "test run, repeat; encapsulation undone after each; "+row.what); err != nil {
			return err
		}
	}
	return nil
}

// cheetahAgentRows measures the server side: the egress cookie writer on a
// reply from the VIP, and the agent's ingress on a segment whose echo it
// replaces before the stack (both restored after each run).
func cheetahAgentRows(ns *netlab.Namespace, a *benchAgent, ctx []byte, o Options, add func(string, int, int, trial, string) error) error {
	if err := cheetah.SetVIP(a, cheetah.AgentVIP{VIP: beamerVIP, ID: 1026, Keys: benchKeys}); err != nil {
		return err
	}
	defer cheetah.DeleteVIP(a, beamerVIP)
	egress, err := cheetah.Egress(a)
	if err != nil {
		return err
	}
	vip := netip.AddrPortFrom(beamerVIP, 80)
	client := netip.AddrPortFrom(clientAddr, 41000)
	reply := wiretest.Frame(net.HardwareAddr{2, 0xbe, 0xa0, 0, 0, 0x11}, wiretest.ClientMAC,
		wiretest.TSSegment(vip, client, false, true, 0x12345678, 5, false))
	inner := wiretest.TSSegment(client, vip, false, true, 7, 0x1234567f, false)
	outer, err := wire.Encapsulate(inner, muxAddr, agentAddr, nil)
	if err != nil {
		return err
	}
	in := wiretest.Frame(wiretest.MuxMAC, net.HardwareAddr{2, 0xbe, 0xa0, 0, 0, 0x11}, outer)
	rows := []struct {
		name, counter, what string
		prog, single        *ebpf.Program
		frame               []byte
	}{
		{"agent-cheetah-egress", "egress_cookie", "reply from the VIP: cookie written into TSval, checksum fixed", a.CheetahEgressBench(), egress, reply},
		{"agent-cheetah-ingress", "ingress_no_echo", "encapsulated segment echoing a cookie: decapsulated, TSecr replaced, checksum fixed", a.CheetahIngressBench(), a.Program(), in},
	}
	for _, row := range rows {
		t := trial{ns: ns, prog: row.prog, frame: row.frame, ctx: ctx, want: tcOK, repeat: o.Repeat, counter: row.counter, read: func() (map[string]uint64, error) { return cheetah.AgentCounters(a) },
			single: row.single, packets: o.PerPacket}
		if err := add(row.name, 1, 0, t, "test run, repeat; "+row.what+" (restored after each run)"); err != nil {
			return err
		}
	}
	return nil
}
