package dpbench

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The live XDP_TX rows (issue 27): the mux's program sends each packet
// back out of the veth it came in on, as a mux with one link does, instead
// of redirecting it to the sink's link. The servers' addresses are then on
// the generator's link (liveTXServer), their neighbour entries on the
// mux's eth0 naming the generator's MAC, so the mux's route lookup finds
// the receiving device and the program returns XDP_TX. A veth delivers an
// XDP_TX frame only to a peer running XDP itself, so the generator's eth0
// runs a counting sink while these rows run: it counts the IP-in-IP frames
// that arrive and drops everything. Its receive poll is threaded and
// pinned to the sink's CPU, the mux's to the mux's CPU, as in the redirect
// rows, and the mux's CPU time per packet is read the same way (the NAPI
// thread's schedstat). The floor is the mux benchmark build's
// encap_floor_plain_bench: fixed outer headers with the option and fixed
// MACs, XDP_TX — the per-packet floor of the test runs, live.

var liveTXServerBase = netip.MustParseAddr("198.18.1.10")

// liveTXServer is the i-th server of the XDP_TX rows, on the generator's
// link.
func liveTXServer(i int) netip.Addr {
	b := liveTXServerBase.As4()
	b[3] += byte(i)
	return netip.AddrFrom4(b)
}

// txNeighbours gives the XDP_TX rows' servers neighbour entries on the
// mux's eth0 with the generator's MAC.
func (n *liveNet) txNeighbours() error {
	genMAC, err := n.gen.LinkMAC("eth0")
	if err != nil {
		return err
	}
	eth0, err := n.mux.Netlink().LinkByName("eth0")
	if err != nil {
		return err
	}
	for i := 0; i < servers; i++ {
		if err := n.mux.Netlink().NeighSet(&netlink.Neigh{LinkIndex: eth0.Attrs().Index, IP: net.IP(liveTXServer(i).AsSlice()),
			HardwareAddr: genMAC, State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V4}); err != nil {
			return err
		}
	}
	return nil
}

// txSink is the counting sink on the generator's eth0.
type txSink struct {
	counts *ebpf.Map // per CPU, one word: IP-in-IP frames arrived
	prog   *ebpf.Program
}

func newTXSink() (*txSink, error) {
	counts, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: 1})
	if err != nil {
		return nil, err
	}
	// Counts a frame when it is IPv4 carrying IP-in-IP (what the mux and
	// the floor send), drops every frame.
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "Dual BSD/GPL", Instructions: asm.Instructions{
		asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // data
		asm.LoadMem(asm.R3, asm.R1, 4, asm.Word), // data_end
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 34), // Ethernet + IPv4 header
		asm.JGT.Reg(asm.R4, asm.R3, "drop"),
		asm.LoadMem(asm.R4, asm.R2, 12, asm.Half),
		asm.JNE.Imm(asm.R4, 0x0008, "drop"), // ETH_P_IP, network order read little-endian
		asm.LoadMem(asm.R4, asm.R2, 23, asm.Byte),
		asm.JNE.Imm(asm.R4, 4, "drop"), // IPPROTO_IPIP
		asm.StoreImm(asm.RFP, -4, 0, asm.Word),
		asm.LoadMapPtr(asm.R1, counts.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 1).WithSymbol("drop"), // XDP_DROP
		asm.Return(),
	}})
	if err != nil {
		counts.Close()
		return nil, fmt.Errorf("the XDP_TX rows' counting sink: %w", err)
	}
	return &txSink{counts: counts, prog: prog}, nil
}

// count is the frames counted so far, on every CPU.
func (s *txSink) count() (uint64, error) {
	var per []uint64
	if err := s.counts.Lookup(uint32(0), &per); err != nil {
		return 0, err
	}
	var sum uint64
	for _, v := range per {
		sum += v
	}
	return sum, nil
}

func (s *txSink) Close() {
	s.prog.Close()
	s.counts.Close()
}

// errNothingArrived: an XDP_TX row whose sink counted no frame.
var errNothingArrived = errors.New("no frame sent back by XDP_TX reached the counting sink")

// measureTX runs one XDP_TX row: the floor (s liveFloor) or the strategy's
// production mux at size, or prog in its place when given (tests). The
// generator sends o.Packets, bounded as in the redirect rows.
func (n *liveNet) measureTX(s forwarding.Strategy, size uint32, o LiveOptions, prog *ebpf.Program) (LiveRow, error) {
	floor := s == liveFloor
	sink, err := newTXSink()
	if err != nil {
		return LiveRow{}, err
	}
	defer sink.Close()
	// The sink first, its poll threaded on the sink's CPU, so that the
	// mux's NAPI threads are the only new ones when the mux attaches.
	napi, err := napiThreads()
	if err != nil {
		return LiveRow{}, err
	}
	sinkLink, err := n.attachXDP(n.gen, sink.prog)
	if err != nil {
		return LiveRow{}, err
	}
	defer sinkLink.Close()
	sinkThreads, err := threadNAPI(n.gen, "eth0", n.sinkCPU, napi)
	if err != nil {
		return LiveRow{}, err
	}

	var m *benchMux
	opts := dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.1.1"), ConnTrackEntries: 4 * o.Flows}
	if floor || prog != nil {
		m, err = loadBenchMux(opts, 0)
	} else {
		var mux *dataplane.Mux
		mux, err = dataplane.LoadMux(opts)
		m = &benchMux{Mux: mux}
	}
	if err != nil {
		return LiveRow{}, err
	}
	defer m.Close()
	switch {
	case prog != nil:
	case floor:
		prog = m.EncapPlainFloorProgram()
	default:
		prog = m.Program()
		cfg, table, err := liveInstanceOn(s, size, liveTXServer)
		if err != nil {
			return LiveRow{}, err
		}
		if err := m.SetInstance(cfg, table); err != nil {
			return LiveRow{}, err
		}
	}
	if napi, err = napiThreads(); err != nil {
		return LiveRow{}, err
	}
	muxLink, err := n.attachXDP(n.mux, prog)
	if err != nil {
		return LiveRow{}, err
	}
	defer muxLink.Close()
	muxThreads, err := threadNAPI(n.mux, "eth0", n.muxCPU, napi)
	if err != nil {
		return LiveRow{}, err
	}

	gen, f, err := n.loadGenerator(o.Flows)
	if err != nil {
		return LiveRow{}, err
	}
	defer gen.Close()

	before, err := m.Counters()
	if err != nil {
		return LiveRow{}, err
	}
	stats0, err := prog.Stats()
	if err != nil {
		return LiveRow{}, err
	}
	vethBefore, err := n.vethStats()
	if err != nil {
		return LiveRow{}, err
	}
	arrived0, err := sink.count()
	if err != nil {
		return LiveRow{}, err
	}
	mux0, err := cpuNs(muxThreads)
	if err != nil {
		return LiveRow{}, err
	}
	sink0, err := cpuNs(sinkThreads)
	if err != nil {
		return LiveRow{}, err
	}
	var took time.Duration
	var genNs uint64
	err = n.gen.DoOnCPU(n.genCPU, func() error {
		g0, err := threadCPUNs()
		if err != nil {
			return err
		}
		start := time.Now()
		_, err = gen.TrafficGenProgram().Run(&ebpf.RunOptions{Data: f, Repeat: uint32(o.Packets), Flags: unix.BPF_F_TEST_XDP_LIVE_FRAMES,
			BatchSize: 64, Context: xdpMD{DataEnd: uint32(len(f)), IngressIfindex: uint32(n.genIf)}})
		took = time.Since(start)
		if err != nil {
			return err
		}
		g1, err := threadCPUNs()
		genNs = g1 - g0
		return err
	})
	if err != nil {
		return LiveRow{}, fmt.Errorf("generator: %w", err)
	}
	time.Sleep(50 * time.Millisecond) // let the last batches drain
	mux1, err := cpuNs(muxThreads)
	if err != nil {
		return LiveRow{}, err
	}
	sink1, err := cpuNs(sinkThreads)
	if err != nil {
		return LiveRow{}, err
	}
	arrived1, err := sink.count()
	if err != nil {
		return LiveRow{}, err
	}
	vethAfter, err := n.vethStats()
	if err != nil {
		return LiveRow{}, err
	}
	after, err := m.Counters()
	if err != nil {
		return LiveRow{}, err
	}
	stats1, err := prog.Stats()
	if err != nil {
		return LiveRow{}, err
	}

	row := LiveRow{Strategy: string(s), Buckets: int(size), Flows: o.Flows, Sent: o.Packets, Seconds: took.Seconds(), TX: true,
		GenCPU: n.genCPU, MuxCPU: n.muxCPU, SinkCPU: n.sinkCPU, GenNs: float64(genNs) / float64(o.Packets),
		Delivered: arrived1 - arrived0, Veth: map[string]map[string]uint64{}}
	for k := range vethAfter {
		if d := statsDelta(vethBefore[k], vethAfter[k]); len(d) > 0 {
			row.Veth[k] = d
		}
	}
	row.GenXmit = sumSuffix(row.Veth["gen/eth0"], "_xdp_xmit")
	row.DropsToMux = sumSuffix(row.Veth["gen/eth0"], "_xdp_xmit_errors")
	// Frames the mux's eth0 sent back that its peer's full ring refused
	// (veth counts them on the receive queue that ran XDP_TX, apart from
	// those it put in the ring: _xdp_tx).
	row.DropsToSink = sumSuffix(row.Veth["mux/eth0"], "_xdp_tx_errors")
	row.Forwarded = after["fwd_bucket"] - before["fwd_bucket"]
	if floor || s == "" {
		// No decision counters: what it sent back is what its veth
		// counted as XDP_TX, delivered to the peer's ring or refused.
		row.Forwarded, row.Buckets = sumSuffix(row.Veth["mux/eth0"], "_xdp_tx")+row.DropsToSink, 0
	}
	if took > 0 {
		row.ForwardedMpps = float64(row.Forwarded) / took.Seconds() / 1e6
	}
	if runs := stats1.RunCount - stats0.RunCount; runs > 0 {
		row.ProgramNs = float64((stats1.Runtime - stats0.Runtime).Nanoseconds()) / float64(runs)
	}
	if row.Delivered == 0 || row.Forwarded == 0 {
		return row, fmt.Errorf("%w (sent %d, the mux's program sent back %d, the sink counted %d)", errNothingArrived, row.Sent, row.Forwarded, row.Delivered)
	}
	row.MuxNs = float64(mux1-mux0) / float64(row.Forwarded)
	row.SinkNs = float64(sink1-sink0) / float64(row.Delivered)
	row.MuxBusy = float64(mux1-mux0) / float64(took.Nanoseconds()+50e6)
	return row, nil
}

// attachXDP attaches prog to ns's eth0 in driver mode.
func (n *liveNet) attachXDP(ns interface{ Do(func() error) error }, prog *ebpf.Program) (link.Link, error) {
	var l link.Link
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifi.Index, Flags: link.XDPDriverMode})
		return err
	})
	return l, err
}
