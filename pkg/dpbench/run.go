package dpbench

import (
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/cilium/ebpf"
)

// Options choose what to measure.
type Options struct {
	Repeat        int      // repetitions per trial
	Trials        int      // trials per figure (median reported)
	BeamerFlows   int      // flows the Beamer rows rotate over
	BeamerBuckets []uint32 // bucket-table sizes of the Beamer rows
	MaglevFlows   []int    // active flows of the Maglev rows
}

// Full is the complete benchmark; Quick is CI's smoke version.
var (
	Full  = Options{Repeat: 1_000_000, Trials: 5, BeamerFlows: 1_000_000, BeamerBuckets: []uint32{1000, 100_000, 1_000_000}, MaglevFlows: []int{1000, 1_000_000}}
	Quick = Options{Repeat: 2000, Trials: 1, BeamerFlows: 1000, BeamerBuckets: []uint32{1000}, MaglevFlows: []int{1000}}
)

const (
	xdpTX = 3
)

func frame(dst netip.Addr, dport uint16, flags int) []byte {
	seg := wiretest.Segment{Flow: wire.Flow{Src: netip.MustParseAddr("198.19.0.1"), Dst: dst, SrcPort: 1024, DstPort: dport, Proto: wire.ProtoTCP},
		Flags: flags, Seq: 1, Ack: 1}
	f := wiretest.Frame(wiretest.ClientMAC, wiretest.MuxMAC, seg.IPv4())
	return append(f, make([]byte, max(0, 60-len(f)))...) // minimum Ethernet frame
}

// beamerRows measures the Beamer mux on b buckets whose histories hold
// `moved` previous owners; first adds the floors and the MPTCP row.
func beamerRows(r *rig, o Options, b uint32, moved int, first bool, ctx func([]byte) any, add func(string, int, int, trial, string) error) error {
	cfg, table := beamerInstance(b, moved)
	m, err := loadMux(cfg, table, 0)
	if err != nil {
		return err
	}
	defer m.Close()
	ack := frame(beamerVIP, 80, wiretest.ACK)
	base := trial{ns: r.ns, frame: ack, ctx: ctx(ack), want: xdpTX, repeat: o.Repeat, read: m.Counters}
	if first {
		for _, p := range []struct {
			name string
			prog *ebpf.Program
		}{{"empty", m.EmptyProgram()}, {"floor", m.FloorProgram()}, {"encap-floor", m.EncapFloorProgram()}} {
			t := base
			t.prog = p.prog
			if err := add(p.name, 1, 0, t, "test run, repeat; empty returns XDP_TX; floor swaps MACs, XDP_TX; encap-floor writes fixed outer headers with the option and undoes them"); err != nil {
				return err
			}
		}
	}
	if err := m.SetBenchFlows(uint32(o.BeamerFlows)); err != nil {
		return err
	}
	t := base
	t.prog, t.counter = m.BenchProgram(), "fwd_bucket"
	name, what := "beamer", "no bucket ever moved: 16-byte option, no history read"
	if moved > 0 {
		t.counter = "fwd_with_previous"
		name, what = fmt.Sprintf("beamer-moved%d", moved), fmt.Sprintf("every bucket moved: %d previous owners in the option (chain entry read)", moved)
	}
	if err := add(name, o.BeamerFlows, int(b), t, "test run, repeat; each repetition a new flow, encapsulation undone after it; "+what); err != nil {
		return err
	}
	if first {
		sub := frame(beamerVIP, 1030, wiretest.ACK)
		t := trial{ns: r.ns, prog: m.BenchProgram(), frame: sub, ctx: ctx(sub), want: xdpTX, repeat: o.Repeat, counter: "fwd_server_id", read: m.Counters}
		return add("beamer-mptcp", o.BeamerFlows, int(b), t, "test run, repeat; MPTCP subflow by server id, no option")
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
	rep := &Report{Repeat: o.Repeat, Trials: o.Trials}
	ctx := func(f []byte) any { return xdpMD{DataEnd: uint32(len(f)), IngressIfindex: uint32(r.ifindex)} }
	add := func(name string, flows, buckets int, t trial, method string) error {
		ns, ok, err := t.run(o.Trials)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		row := Row{Name: name, Flows: flows, Buckets: buckets, NsPerPacket: ns, MppsPerCore: 1e3 / ns, PathVerified: ok, Method: method}
		empty := "empty" // tc programs are netted against the empty tc program
		if name == "empty-tc" || name == "decap-floor" || strings.HasPrefix(name, "agent") {
			empty = "empty-tc"
		}
		if e := rep.find(empty, 0, 0); e != nil {
			row.NsNet = ns - e.NsPerPacket
		}
		rep.Programs = append(rep.Programs, row)
		fmt.Fprintf(progress, "  %-14s flows %-8d %7.1f ns/packet  path verified: %v\n", name, flows, ns, ok)
		return nil
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
			if err := beamerRows(r, o, b, moved, i == 0 && moved == 0, ctx, add); err != nil {
				return nil, err
			}
		}
	}

	// Maglev rows: the connection table first filled with the flows by their
	// SYNs, then measured on their ACKs (every repetition a table hit).
	cfg, table, err := maglevInstance()
	if err != nil {
		return nil, err
	}
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	for _, n := range o.MaglevFlows {
		if err := maglevRow(r, rep, add, cfg, table, n, cpus, o, ctx); err != nil {
			return nil, err
		}
	}
	// Prism rows: MCT hits and misses, at the Maglev rows' flow counts.
	for _, n := range o.MaglevFlows {
		if err := prismRows(r, o, n, ctx, add); err != nil {
			return nil, err
		}
	}
	if err := agentRows(r, o, add); err != nil {
		return nil, err
	}
	rep.ratios()
	return rep, nil
}

func maglevRow(r *rig, rep *Report, add func(string, int, int, trial, string) error, cfg forwarding.Instance, table *forwarding.Table, n, cpus int, o Options, ctx func([]byte) any) error {
	// Each CPU's LRU list holds its share of the table: leave room for all
	// flows on the one CPU the benchmark runs on.
	m, err := loadMux(cfg, table, 2*n*cpus)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.SetBenchFlows(uint32(n)); err != nil {
		return err
	}
	syn := frame(maglevVIP, 80, wiretest.SYN)
	fill := trial{ns: r.ns, prog: m.BenchProgram(), frame: syn, ctx: ctx(syn), want: xdpTX, repeat: n, counter: "ct_syn", read: m.Counters}
	if _, ok, err := fill.run(1); err != nil || !ok {
		return fmt.Errorf("filling the connection table with %d flows: %v (path verified %v)", n, err, ok)
	}
	if got, err := m.ConnTrackEntries(); err != nil || got != n {
		return fmt.Errorf("connection table holds %d entries after %d SYNs (%v)", got, n, err)
	}
	ack := frame(maglevVIP, 80, wiretest.ACK)
	t := trial{ns: r.ns, prog: m.BenchProgram(), frame: ack, ctx: ctx(ack), want: xdpTX, repeat: o.Repeat, counter: "ct_hit", read: m.Counters}
	return add("maglev", n, int(cfg.Buckets), t, "test run, repeat; each repetition a known flow (connection-table hit), encapsulation undone after it")
}

func (rep *Report) ratios() {
	floor, beamer := rep.find("floor", 0, 0), rep.find("beamer", 0, 0)
	if floor != nil && beamer != nil {
		rep.Ratios.BeamerOverFloor = beamer.NsPerPacket / floor.NsPerPacket
	}
	if mg := rep.find("maglev", 1_000_000, 0); mg != nil && beamer != nil {
		rep.Ratios.BeamerOverMaglev1M = beamer.NsPerPacket / mg.NsPerPacket
	}
	if local, empty := rep.find("agent-local", 0, 0), rep.find("empty-tc", 0, 0); local != nil && empty != nil {
		rep.Ratios.AgentLocalOverEmptyTC = local.NsPerPacket / empty.NsPerPacket
	}
}
