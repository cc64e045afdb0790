package dpbench

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/cilium/ebpf"
)

// Options choose what to measure.
type Options struct {
	Repeat        int      // repetitions per trial
	Trials        int      // trials per figure (median reported)
	BeamerFlows   int      // flows the Beamer rows rotate over
	BeamerBuckets []uint32 // bucket-table sizes of the Beamer rows
	MaglevFlows   []int    // active flows of the Maglev rows
	PerPacket     int      // per-packet method: test runs (packets) per trial
	// Baseline is the compare mode's baseline mux object (the benchmark
	// build, e.g. `beamer-lab bench save-baseline` of an earlier build, or an
	// earlier commit's pkg/dataplane/muxbench_bpfel.o); nil: none.
	Baseline     []byte
	BaselineName string
	// BeamerOnly stops after the floors and the Beamer rows
	// (scripts/mux-stages.sh measures the Beamer path alone).
	BeamerOnly bool
	// AgentOnly measures the agent's rows alone (tc and XDP, both
	// families): no mux rows (the agent's are netted against empty
	// programs of their own hook either way).
	AgentOnly bool
	// MaglevOnly measures the Maglev rows alone (maglev and maglev-lru
	// at each of MaglevFlows): the connection table's paired runs.
	MaglevOnly bool
	// AgentBaseline is the compare mode's baseline agent object (an
	// earlier commit's pkg/dataplane/agentbench_bpfel.o): its programs run
	// on the current agent's maps, batched and per packet; nil: none.
	AgentBaseline     []byte
	AgentBaselineName string

	// ns is the bench namespace (set by Run): every mux loaded publishes
	// its servers' next hops resolved in it, as the daemon does
	// (publishNextHops).
	ns *netlab.Namespace
}

// Full is the complete benchmark; Quick is CI's smoke version. Full takes
// many short trials (a few milliseconds each) rather than a few long ones:
// on a shared machine the load of others comes in bursts that a long trial
// always catches and a short one often misses, so the quickest trials show
// the program's own cost (the quiet figures) and the median what the
// machine gave.
var (
	Full  = Options{Repeat: 50_000, Trials: 21, BeamerFlows: 1_000_000, BeamerBuckets: []uint32{1000, 100_000, 1_000_000}, MaglevFlows: []int{1000, 1_000_000}, PerPacket: 5_000}
	Quick = Options{Repeat: 2000, Trials: 1, BeamerFlows: 1000, BeamerBuckets: []uint32{1000}, MaglevFlows: []int{1000}, PerPacket: 500}
)

const (
	xdpTX = 3
)

func frame(dst netip.Addr, dport uint16, flags int) []byte {
	return flowFrame(wire.Flow{Src: netip.MustParseAddr("198.19.0.1"), Dst: dst, SrcPort: 1024, DstPort: dport, Proto: wire.ProtoTCP}, flags)
}

func flowFrame(f wire.Flow, flags int) []byte {
	seg := wiretest.Segment{Flow: f, Flags: flags, Seq: 1, Ack: 1}
	fr := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, seg.IPv4())
	return append(fr, make([]byte, max(0, 60-len(fr)))...) // minimum Ethernet frame
}

// rotating is the per-packet frames of a row over n flows: the seq-th
// packet belongs to the flow the benchmark build's seq-th repetition uses
// (the same random order).
func rotating(dst netip.Addr, dport uint16, flags int, n int) func(uint32) []byte {
	return func(seq uint32) []byte {
		f := benchFlow(dst, benchOrder(seq%uint32(n), uint32(n)))
		f.DstPort = dport
		return flowFrame(f, flags)
	}
}

// setBenchFlows makes the benchmark build rotate over n flows, after
// checking its order visits each exactly once.
func setBenchFlows(m *benchMux, n int) error {
	if err := checkOrder(uint32(n)); err != nil {
		return err
	}
	return m.SetBenchFlows(uint32(n))
}

// benchLines are the lines-K rows: K lines read, each in a page of its
// own (131 lines apart), and -page: all sixteen in one page.
var benchLines = []struct {
	name          string
	lines, stride uint32
}{{"lines-0", 0, 131}, {"lines-4", 4, 131}, {"lines-16", 16, 131}, {"lines-16-page", 16, 2}}

// beamerRows measures the Beamer mux on b buckets whose histories hold
// `moved` previous owners; first adds the floors and the MPTCP row.
func beamerRows(r *rig, o Options, b uint32, moved int, scattered, first bool, ctx func([]byte) any, add func(string, int, int, trial, string) error) error {
	cfg, table := beamerInstanceLaid(b, moved, scattered)
	m, err := loadMux(cfg, table, 0, o)
	if err != nil {
		return err
	}
	defer m.Close()
	ack := frame(beamerVIP, 80, wiretest.ACK)
	base := trial{ns: r.ns, frame: ack, ctx: ctx(ack), want: xdpTX, repeat: o.Repeat, read: m.Counters, packets: o.PerPacket}
	if first {
		for _, p := range []struct {
			name string
			prog *ebpf.Program
		}{{"empty", m.EmptyProgram()}, {"floor", m.FloorProgram()}, {"encap-floor", m.EncapFloorProgram()}, {"encap-floor-plain", m.EncapPlainFloorProgram()}} {
			t := base
			t.prog, t.single = p.prog, p.prog
			if p.name == "empty" && m.base != nil {
				t.base, t.baseSingle = m.base.EmptyProgram(), m.base.EmptyProgram()
			}
			if p.name == "encap-floor-plain" {
				// No undo: a repeated run would grow the packet again.
				t.prog = nil
			}
			if err := add(p.name, 1, 0, t, "test run, repeat; empty returns XDP_TX; floor swaps MACs, XDP_TX; encap-floor writes fixed outer headers with the option and undoes them; encap-floor-plain writes them and sends, per packet only"); err != nil {
				return err
			}
		}
	}
	if first {
		// What each cache line a program touches costs, by method: the
		// same distinct lines read on every run (bpf/bench/mux_bench.h).
		for _, l := range benchLines {
			if err := m.SetBenchLines(l.lines, l.stride); err != nil {
				return err
			}
			t := base
			t.prog, t.single = m.LinesProgram(), m.LinesProgram()
			if err := add(l.name, 1, 0, t, "test run, repeat; reads the same K distinct cache lines of an array every run (a page each, or -page: all in one page), changes nothing"); err != nil {
				return err
			}
		}
	}
	if err := setBenchFlows(m, o.BeamerFlows); err != nil {
		return err
	}
	if first {
		// Batched only: the production program does not rotate, so the
		// per-packet method has nothing to subtract.
		t := base
		t.prog, t.packets = m.RotationProgram(), 0
		if err := add("rotation", o.BeamerFlows, 0, t, "test run, repeat; moves the packet to the next flow as the batched mux rows do before the mux runs, nothing else"); err != nil {
			return err
		}
	}
	t := base
	t.prog, t.counter, t.base, t.baseSingle = m.BenchProgram(), "fwd_bucket", m.baseBench(), m.baseProgram()
	t.single, t.frameAt = m.Program(), rotating(beamerVIP, 80, wiretest.ACK, o.BeamerFlows)
	name, what := "beamer", "no bucket ever moved: 16-byte option, no history read"
	if moved > 0 {
		t.counter = "fwd_with_previous"
		name, what = fmt.Sprintf("beamer-moved%d", moved), fmt.Sprintf("every bucket moved: %d previous owners in the option (chain entry read)", moved)
	}
	if scattered {
		name, what = "beamer-scattered", "no bucket ever moved, buckets dealt to the servers in turn (no block one server's: block summary, then the entry)"
	}
	if err := add(name, o.BeamerFlows, int(b), t, "test run, repeat; each repetition a new flow, encapsulation undone after it; "+what); err != nil {
		return err
	}
	if first {
		// What is left with the product's other work gone: the least a
		// Beamer mux does for this row's packets (at the first size: it
		// reads no block summary, which larger tables need).
		if err := m.SetMinimal(beamerVIP, b, uint32(table.Generation), 1763700000); err != nil {
			return err
		}
		flows := rotating(beamerVIP, 80, wiretest.ACK, o.BeamerFlows)
		for _, p := range []struct {
			name, what string
			prog       *ebpf.Program
		}{
			{"beamer-floor", "the least a Beamer mux does for the beamer row's packets: shape (IPv4 without options, TCP), one VIP compared, the flow hash, the bucket's entry and the server's word read from plain arrays, the encapsulation with the option, fixed MACs; no other check, counter or lookup", m.MinimalProgram()},
			{"beamer-floor-counted", "beamer-floor with the least an operated mux adds: one per-CPU packet counter, the server's next-hop MAC read from a plain array by server id", m.MinimalCountedProgram()},
		} {
			if err := sameServer(p.prog, m.Program(), flows, ctx); err != nil {
				return fmt.Errorf("%s: %w", p.name, err)
			}
			t := base
			t.prog, t.single, t.frameAt = nil, p.prog, flows
			if err := add(p.name, o.BeamerFlows, int(b), t, "test run, per packet only; "+p.what); err != nil {
				return err
			}
		}
	}
	if moved == 4 {
		// The moved-4 target's bound: the least a Beamer mux does for
		// this row's packets. Checked on the whole outer header — the
		// current server, the previous owners and the time of the change
		// in the option, with the table's own generation and incarnation —
		// so that it cannot measure something easier than the row.
		if err := m.SetMinimal(beamerVIP, b, uint32(table.Generation), table.Incarnation); err != nil {
			return err
		}
		if err := m.SetMinimalHistory(); err != nil {
			return err
		}
		flows := rotating(beamerVIP, 80, wiretest.ACK, o.BeamerFlows)
		const outer = 20 + 16 + 4*4 // IPv4 header and the option naming 4 previous owners
		if err := sameOutput(m.MinimalMoved4Program(), m.Program(), flows, ctx, ethLen, ethLen+outer); err != nil {
			return fmt.Errorf("beamer-floor-moved4: %w", err)
		}
		t := base
		t.prog, t.single, t.frameAt = nil, m.MinimalMoved4Program(), flows
		if err := add("beamer-floor-moved4", o.BeamerFlows, int(b), t, "test run, per packet only; the least a Beamer mux does for the beamer-moved4 row's packets: beamer-floor, and the bucket's side word, its chain entry and the 4 previous owners' server words read from plain arrays, their addresses and the time of the change in the option (16 + 4 × 4 bytes); checked to write the outer header the mux writes"); err != nil {
			return err
		}
	}
	if scattered {
		// The scattered row's bound: the plain floor plus one read of a
		// random entry of a table as large as this one's entries.
		if err := m.SetRandomEntries(b); err != nil {
			return err
		}
		t := base
		t.prog, t.single, t.frameAt = nil, m.RandomFloorProgram(), rotating(beamerVIP, 80, wiretest.ACK, o.BeamerFlows)
		if err := add("encap-floor-random", o.BeamerFlows, int(b), t, "test run, per packet only; encap-floor-plain after one read of a 16-bit entry at a random place (by the packet's flow) among as many entries as the row's buckets: what reading one entry of such a table in the flows' random order costs"); err != nil {
			return err
		}
	}
	if first {
		sub := frame(beamerVIP, 1030, wiretest.ACK)
		t := trial{ns: r.ns, prog: m.BenchProgram(), frame: sub, ctx: ctx(sub), want: xdpTX, repeat: o.Repeat, counter: "fwd_server_id", read: m.Counters,
			base: m.baseBench(), baseSingle: m.baseProgram(), single: m.Program(), frameAt: rotating(beamerVIP, 1030, wiretest.ACK, o.BeamerFlows), packets: o.PerPacket}
		if err := add("beamer-mptcp", o.BeamerFlows, int(b), t, "test run, repeat; MPTCP subflow by server id, no option"); err != nil {
			return err
		}
		// The beamer row with no next hop published: every packet asks
		// the per-CPU cache of FIB answers (the fallback).
		m.WithdrawAllNextHops()
		t = base
		t.prog, t.counter, t.base, t.baseSingle = m.BenchProgram(), "fwd_bucket", m.baseBench(), m.baseProgram()
		t.single, t.frameAt = m.Program(), rotating(beamerVIP, 80, wiretest.ACK, o.BeamerFlows)
		return add("beamer-fib", o.BeamerFlows, int(b), t, "test run, repeat; as beamer, with no next hop published by the daemon: the per-CPU cache of FIB answers")
	}
	return nil
}

// ethLen is the Ethernet header's length: the outer IPv4 header follows.
const ethLen = 14

// sameServer checks that two programs send the first flows' packets to
// the same server: the outer IPv4 destination of what each transmits.
func sameServer(a, b *ebpf.Program, frameAt func(uint32) []byte, ctx func([]byte) any) error {
	const daddr = ethLen + 16 // the outer header's destination
	return sameOutput(a, b, frameAt, ctx, daddr, daddr+4)
}

// sameOutput checks that two programs transmit the first 64 flows'
// packets with the same bytes [lo, hi).
func sameOutput(a, b *ebpf.Program, frameAt func(uint32) []byte, ctx func([]byte) any, lo, hi int) error {
	for seq := range uint32(64) {
		var got [2][]byte
		for i, p := range []*ebpf.Program{a, b} {
			f := frameAt(seq)
			out := make([]byte, len(f)+256)
			opts := ebpf.RunOptions{Data: f, DataOut: out, Context: ctx(f)}
			ret, err := p.Run(&opts)
			if err != nil {
				return err
			}
			if ret != xdpTX || len(opts.DataOut) < hi {
				return fmt.Errorf("flow %d: verdict %d, %d bytes out", seq, ret, len(opts.DataOut))
			}
			got[i] = opts.DataOut[lo:hi]
		}
		if !bytes.Equal(got[0], got[1]) {
			return fmt.Errorf("flow %d: bytes %d to %d are %x, the mux's %x", seq, lo, hi, got[0], got[1])
		}
	}
	return nil
}

// Run measures every program and returns the report.
func Run(o Options, progress io.Writer) (*Report, error) {
	r, err := newRig()
	if err != nil {
		return nil, err
	}
	defer r.close()
	o.ns = r.ns
	emptyXDP, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "Dual BSD/GPL", Instructions: xdpReturn(xdpTX)})
	if err != nil {
		return nil, err
	}
	defer emptyXDP.Close()
	emptyTC, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "Dual BSD/GPL", Instructions: xdpReturn(tcOK)})
	if err != nil {
		return nil, err
	}
	defer emptyTC.Close()
	o.Trials = comparedTrials(o.Trials, o.Baseline != nil || o.AgentBaseline != nil)
	rep := &Report{Repeat: o.Repeat, Trials: o.Trials, PerPacket: o.PerPacket, Baseline: o.BaselineName, AgentBaseline: o.AgentBaselineName}
	if o.Baseline != nil {
		cfg, table := beamerInstanceLaid(1000, 0, false)
		m, err := loadMux(cfg, table, 0, o)
		if err != nil {
			return nil, err
		}
		rep.BaselinePrivate = m.base.Private
		m.Close()
	}
	ctx := func(f []byte) any { return xdpMD{DataEnd: uint32(len(f)), IngressIfindex: uint32(r.ifindex)} }
	add := func(name string, flows, buckets int, t trial, method string) error {
		// Netted per trial against an empty program of the same kind.
		if name != "empty" && name != "empty-tc" {
			t.empty, t.emptyWant = emptyXDP, xdpTX
			if emptyOf(name) == "empty-tc" {
				t.empty, t.emptyWant = emptyTC, tcOK
			}
		}
		res, err := t.run(o.Trials)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		ns := res.batched.Median
		row := Row{Name: name, Flows: flows, Buckets: buckets, NsPerPacket: ns, NsMin: res.batched.Min, NsMax: res.batched.Max,
			PathVerified: res.verified, Method: method}
		if ns > 0 {
			row.MppsPerCore = 1e3 / ns
		}
		if res.batchedNet != nil {
			row.NsNet, row.NsNetQuiet = *res.batchedNet, *res.batchedQuiet
		}
		if p := res.perPacket; p != nil {
			row.PerPacket = &Figure{NsMedian: p.Median, NsMin: p.Min, NsMax: p.Max, PathVerified: res.perPacketOK}
			if res.perPacketNet != nil {
				row.PerPacket.NsNet, row.PerPacket.NsNetQuiet = *res.perPacketNet, *res.perPacketQuiet
			}
		}
		if b := res.baseline; b != nil {
			row.Baseline = &Figure{NsMedian: b.Median, NsMin: b.Min, NsMax: b.Max, PathVerified: res.baselineVerified}
			if res.baselineNet != nil {
				row.Baseline.NsNet, row.Baseline.NsNetQuiet = *res.baselineNet, *res.baselineQuiet
			}
		}
		if b := res.baselinePerPacket; b != nil {
			row.BaselinePerPacket = &Figure{NsMedian: b.Median, NsMin: b.Min, NsMax: b.Max, PathVerified: res.baselinePerPacketOK}
			if res.baselinePerPacketNet != nil {
				row.BaselinePerPacket.NsNet, row.BaselinePerPacket.NsNetQuiet = *res.baselinePerPacketNet, *res.baselinePerPacketQuiet
			}
		}
		rep.Programs = append(rep.Programs, row)
		fmt.Fprintf(progress, "  %-22s flows %-8d %7.1f ns batched", name, flows, ns)
		if row.PerPacket != nil {
			fmt.Fprintf(progress, " %7.1f ns per packet", row.PerPacket.NsMedian)
		}
		if row.Baseline != nil {
			fmt.Fprintf(progress, " (baseline %7.1f)", row.Baseline.NsMedian)
		}
		if row.BaselinePerPacket != nil {
			fmt.Fprintf(progress, " (baseline per packet %7.1f)", row.BaselinePerPacket.NsMedian)
		}
		fmt.Fprintf(progress, "  path verified: %v\n", res.verified && (row.PerPacket == nil || row.PerPacket.PathVerified))
		return nil
	}

	if o.AgentOnly {
		if err := agentRows(r, rep, o, add); err != nil {
			return nil, err
		}
		if err := agent6Rows(r, o, add); err != nil {
			return nil, err
		}
		rep.ratios()
		return rep, nil
	}
	if o.MaglevOnly {
		if err := maglevRows(r, rep, o, ctx, add); err != nil {
			return nil, err
		}
		rep.ratios()
		return rep, nil
	}
	// Beamer rows, and the floor and empty program from the same object:
	// buckets that never moved (the fast path: no history to read), every
	// bucket moved once (one previous owner in the option, the paper's
	// case), and at the first size every bucket moved four times.
	for i, b := range o.BeamerBuckets {
		for _, moved := range []int{0, 1, 4} {
			if moved == 4 && i > 0 {
				continue
			}
			if err := beamerRows(r, o, b, moved, false, i == 0 && moved == 0, ctx, add); err != nil {
				return nil, err
			}
		}
		// At the largest size, the same table scattered: the path of a
		// table whose blocks are not one owner's.
		if i == len(o.BeamerBuckets)-1 && b >= 1<<14 {
			if err := beamerRows(r, o, b, 0, true, false, ctx, add); err != nil {
				return nil, err
			}
		}
	}

	if o.BeamerOnly {
		return rep, nil
	}
	if err := maglevRows(r, rep, o, ctx, add); err != nil {
		return nil, err
	}
	// Prism rows: MCT hits and misses, at the Maglev rows' flow counts.
	for _, n := range o.MaglevFlows {
		if err := prismRows(r, o, n, ctx, add); err != nil {
			return nil, err
		}
	}
	if err := cheetahMuxRows(r, o, ctx, add); err != nil {
		return nil, err
	}
	if err := udpMuxRows(r, o, ctx, add); err != nil { // udp.go
		return nil, err
	}
	if err := gueMuxRows(r, o, ctx, add); err != nil { // gue.go
		return nil, err
	}
	if err := ipv6Rows(r, o, ctx, add); err != nil { // ipv6.go
		return nil, err
	}
	if err := agentRows(r, rep, o, add); err != nil {
		return nil, err
	}
	if err := agent6Rows(r, o, add); err != nil { // agent6.go
		return nil, err
	}
	rep.ratios()
	return rep, nil
}

// maglevRows are the Maglev rows: the connection table first filled with
// the flows by their SYNs, then measured on their ACKs (every repetition a
// table hit).
func maglevRows(r *rig, rep *Report, o Options, ctx func([]byte) any, add func(string, int, int, trial, string) error) error {
	cfg, table, err := maglevInstance()
	if err != nil {
		return err
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	for _, n := range o.MaglevFlows {
		if err := maglevRow(r, rep, add, cfg, table, n, cpus, o, ctx); err != nil {
			return err
		}
	}
	return nil
}

// maglevRow measures the Maglev strategy at n flows, twice in the same
// mux and the same run: row maglev with its connection table (a
// set-associative table sized for n connections, bpf/include/conntrack.h)
// and row maglev-lru with the LRU hash it replaced (the benchmark build's
// reference, bpf/bench/conntrack_lru_bench.h), each filled by the flows'
// SYNs and then measured on their ACKs.
func maglevRow(r *rig, rep *Report, add func(string, int, int, trial, string) error, cfg forwarding.Instance, table *forwarding.Table, n, cpus int, o Options, ctx func([]byte) any) error {
	// Each CPU's LRU list holds its share of the reference table: leave
	// room for all flows on the one CPU the benchmark runs on.
	m, err := loadMuxCT(cfg, table, n, 2*n*cpus, o)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := setBenchFlows(m, n); err != nil {
		return err
	}
	// Filled in one order, measured in another: the LRU table's entries
	// are allocated in the order the flows arrive, and reading them back
	// in that order would be nearly sequential.
	if err := m.SetBenchOrder(fillKey); err != nil {
		return err
	}
	syn := frame(maglevVIP, 80, wiretest.SYN)
	for _, prog := range []*ebpf.Program{m.BenchProgram(), m.MaglevLRUProgram()} {
		fill := trial{ns: r.ns, prog: prog, frame: syn, ctx: ctx(syn), want: xdpTX, repeat: n, counter: "ct_syn", read: m.Counters}
		if _, ok, err := fill.batched(fill.prog); err != nil || !ok {
			return fmt.Errorf("filling the connection table with %d flows: %v (path verified %v)", n, err, ok)
		}
	}
	if err := m.SetBenchOrder(measureKey); err != nil {
		return err
	}
	if got, err := m.ConnTrackLRUEntries(); err != nil || got != n {
		return fmt.Errorf("reference connection table holds %d entries after %d SYNs (%v)", got, n, err)
	}
	// A set-associative table sized for n connections leaves ~0.4% of n
	// random flows without room in their bucket (conntrack.go): their
	// packets are misses (the Maglev table, remembered again in place of
	// another), counted with the hits and reported.
	kept, err := m.ConnTrackEntries()
	if err != nil || kept < n-n/50 || kept > n {
		return fmt.Errorf("connection table holds %d entries after %d SYNs (%v)", kept, n, err)
	}
	ack := frame(maglevVIP, 80, wiretest.ACK)
	t := trial{ns: r.ns, prog: m.BenchProgram(), frame: ack, ctx: ctx(ack), want: xdpTX, repeat: o.Repeat, counter: "ct_hit", or: "ct_miss", read: m.Counters,
		base: m.baseBench(), baseSingle: m.baseProgram(), single: m.Program(), frameAt: rotating(maglevVIP, 80, wiretest.ACK, n), packets: o.PerPacket}
	before, err := m.Counters()
	if err != nil {
		return err
	}
	// The reference first: the new table's misses re-insert flows, and
	// then its hit share is read over its own trials only.
	lru := t
	lru.prog, lru.single, lru.or, lru.base, lru.baseSingle = m.MaglevLRUProgram(), m.MaglevLRUSingle(), "", nil, nil
	if m.base != nil {
		lru.base, lru.baseSingle = m.base.MaglevLRUProgram(), m.base.MaglevLRUSingle()
	}
	if err := add("maglev-lru", n, int(cfg.Buckets), lru, "the same packets as maglev with the connection table of before (LRU hash, 16-byte key, one LRU list per CPU, map-in-map) in the same mux: every packet a hit"); err != nil {
		return err
	}
	mid, err := m.Counters()
	if err != nil {
		return err
	}
	if err := add("maglev", n, int(cfg.Buckets), t, fmt.Sprintf("each packet a known flow in random order, the table filled by the flows' SYNs: %d-bucket set-associative table for %d connections holding %d of the %d flows after the fill", m.ConnTrackCapacity()/4, n, kept, n)); err != nil {
		return err
	}
	after, err := m.Counters()
	if err != nil {
		return err
	}
	if lruHits := mid["ct_hit"] - before["ct_hit"]; mid["ct_miss"] != before["ct_miss"] || lruHits == 0 {
		return fmt.Errorf("maglev-lru: %d hits, %d misses", lruHits, mid["ct_miss"]-before["ct_miss"])
	}
	hits, misses := after["ct_hit"]-mid["ct_hit"], after["ct_miss"]-mid["ct_miss"]
	row := &rep.Programs[len(rep.Programs)-1]
	row.HitShare = float64(hits) / float64(max(hits+misses, 1))
	row.Method += fmt.Sprintf("; %.2f%% of its packets hits, the rest misses", 100*row.HitShare)
	return nil
}

// emptyOf is the empty program a row is netted against: tc programs
// against the empty tc program, XDP ones against the empty XDP program.
func emptyOf(name string) string {
	if name == "empty-tc" || name == "decap-floor" || name == "strip-floor-tc" || (strings.HasPrefix(name, "agent") && !strings.HasPrefix(name, "agent-xdp")) {
		return "empty-tc"
	}
	return "empty"
}

func (rep *Report) ratios() {
	floor, beamer := rep.find("encap-floor", 0, 0), rep.find("beamer", 0, 1000)
	if floor != nil && beamer != nil && floor.NsNet > 0 {
		rep.Ratios.BeamerOverEncapFloor = beamer.NsNet / floor.NsNet
	}
	if floor != nil && beamer != nil && floor.NsNetQuiet > 0 {
		rep.Ratios.BeamerOverEncapFloorQuiet = beamer.NsNetQuiet / floor.NsNetQuiet
	}
	if beamer == nil {
		beamer = rep.find("beamer", 0, 0)
	}
	if mg := rep.find("maglev", 1_000_000, 0); mg != nil && beamer != nil {
		rep.Ratios.BeamerOverMaglev1M = beamer.NsPerPacket / mg.NsPerPacket
	}
	if mg, lru := rep.find("maglev", 1_000_000, 0), rep.find("maglev-lru", 1_000_000, 0); mg != nil && lru != nil {
		ratio := func(a, b float64) float64 {
			if b <= 0 {
				return 0
			}
			return a / b
		}
		rep.Ratios.MaglevOverLRU1M, rep.Ratios.MaglevOverLRU1MQuiet = ratio(mg.NsNet, lru.NsNet), ratio(mg.NsNetQuiet, lru.NsNetQuiet)
		if mg.PerPacket != nil && lru.PerPacket != nil {
			rep.Ratios.MaglevOverLRU1MPerPacket = ratio(mg.PerPacket.NsNet, lru.PerPacket.NsNet)
			rep.Ratios.MaglevOverLRU1MPerPacketQuiet = ratio(mg.PerPacket.NsNetQuiet, lru.PerPacket.NsNetQuiet)
		}
	}
	if local, empty := rep.find("agent-local", 0, 0), rep.find("empty-tc", 0, 0); local != nil && empty != nil {
		rep.Ratios.AgentLocalOverEmptyTC = local.NsPerPacket / empty.NsPerPacket
	}
	if local, empty := rep.find("agent-xdp-local", 0, 0), rep.find("empty", 0, 0); local != nil && empty != nil {
		rep.Ratios.AgentXDPLocalOverEmpty = local.NsPerPacket / empty.NsPerPacket
	}
	rep.agentFloorRatios()
}

// comparedTrials is the trial count of a run: in the compare mode an even
// one (an odd count one more). The two builds take turns going first
// (trial.run), and the second of a pair finds the first's flows in the
// caches; with an odd count one build goes first once more, so its median
// is a first-going trial and the other's a second-going one — a bias of
// tens of ns on the scattered row between two identical objects (issue
// 27). With an even count each goes first in half the trials.
func comparedTrials(trials int, compare bool) int {
	if compare && trials > 1 && trials%2 == 1 {
		return trials + 1
	}
	return trials
}
