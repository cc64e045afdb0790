package dpbench

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// LiveRow is one live-traffic measurement.
type LiveRow struct {
	Strategy      string  `json:"strategy"`
	Buckets       int     `json:"buckets"`
	Flows         int     `json:"flows"`
	Sent          int     `json:"sent"`
	Forwarded     uint64  `json:"forwarded"`
	Seconds       float64 `json:"seconds"`
	ForwardedMpps float64 `json:"forwarded_mpps"`
	ProgramNs     float64 `json:"program_ns_per_packet"` // kernel BPF statistics of the mux program

	// Where each part ran and what it cost: the generator (the test-run
	// thread), the mux (its receive interface's NAPI thread: veth receive,
	// the XDP program, the redirect to the sink's ring) and the sink (its
	// NAPI thread), CPU ns per packet sent (generator) or forwarded.
	Softirq   bool    `json:"softirq"` // all polls in softirq on the generator's CPU: shares not separable
	GenCPU    int     `json:"generator_cpu"`
	MuxCPU    int     `json:"mux_cpu"`
	SinkCPU   int     `json:"sink_cpu"`
	GenNs     float64 `json:"generator_cpu_ns_per_packet"`
	MuxNs     float64 `json:"mux_cpu_ns_per_packet"`
	SinkNs    float64 `json:"sink_cpu_ns_per_packet"`
	MuxBusy   float64 `json:"mux_cpu_busy"`          // share of the run the mux's thread was on its CPU
	GenXmit   uint64  `json:"generator_transmitted"` // frames the generator's veth took
	Delivered uint64  `json:"delivered"`             // forwarded frames that reached the sink's ring
	// Frames refused because the receiver's ring was full (veth counts them
	// on the sender as xdp_xmit_errors): the sender was faster, for a while,
	// than the receiver's poll.
	DropsToMux  uint64 `json:"drops_gen_to_mux"`
	DropsToSink uint64 `json:"drops_mux_to_sink"`
	// Other non-zero veth counters of the run, per interface.
	Veth map[string]map[string]uint64 `json:"veth,omitempty"`
	// TX: the row's program sends each packet back out of the veth it
	// came in on (XDP_TX) to a counting sink on the generator's end,
	// instead of redirecting it to the sink's link (live_tx.go).
	TX bool `json:"xdp_tx,omitempty"`
}

// LiveOptions shape the live benchmark.
type LiveOptions struct {
	Packets int // packets the generator sends per row (bounded: it stops by itself)
	Flows   int
	Beamer  []uint32 // bucket counts
	Maglev  []uint32 // table sizes (prime)
	AWFD    []uint32 // Maglev fallback table sizes (prime) of the awfd rows
	// Softirq adds a first row (Beamer, first size) with the kernel's
	// default of every poll in softirq on the generator's CPU.
	Softirq bool
	// TX adds the XDP_TX rows: the encapsulation floor and Beamer at its
	// first size sending back out of the mux's receiving veth (live_tx.go).
	TX bool
}

// LiveFull and LiveQuick are the live benchmark's sizes.
var (
	LiveFull  = LiveOptions{Packets: 4_000_000, Flows: 1_000_000, Beamer: []uint32{1000, 1_000_000}, Maglev: []uint32{1009, 1_000_003}, AWFD: []uint32{1009}, Softirq: true, TX: true}
	LiveQuick = LiveOptions{Packets: 20_000, Flows: 1000, Beamer: []uint32{1000}, Maglev: []uint32{1009}, AWFD: []uint32{1009}, TX: true}
)

// liveNet: generator → mux → sink, each in its namespace. The generator is
// the kernel's own: an XDP program run in live-frames test mode, which
// transmits its packet for real, again and again, each time as another flow.
// The sink drops everything in XDP. Servers' addresses are on the sink's
// link, so the mux redirects from eth0 to eth1.
type liveNet struct {
	gen, mux, sink          *netlab.Namespace
	genIf, muxIf            int
	links                   []link.Link
	genCPU, muxCPU, sinkCPU int
	sinkThreads             []int          // nil: the sink polls in softirq
	sinkNAPI                map[int]string // NAPI threads before the sink's XDP program
}

var liveServerBase = netip.MustParseAddr("198.18.2.10")

func liveServer(i int) netip.Addr {
	b := liveServerBase.As4()
	b[3] += byte(i)
	return netip.AddrFrom4(b)
}

func newLiveNet(lab *netlab.Lab) (*liveNet, error) {
	n := &liveNet{}
	var err error
	for _, p := range []struct {
		ns   **netlab.Namespace
		name string
	}{{&n.gen, "gen"}, {&n.mux, "lmux"}, {&n.sink, "sink"}} {
		if *p.ns, err = lab.Namespace(p.name); err != nil {
			return nil, err
		}
	}
	if err := lab.Veth(n.gen, "eth0", netip.MustParsePrefix("198.18.1.2/24"), n.mux, "eth0", netip.MustParsePrefix("198.18.1.1/24"), 0); err != nil {
		return nil, err
	}
	if err := lab.Veth(n.mux, "eth1", netip.MustParsePrefix("198.18.2.1/24"), n.sink, "eth0", netip.MustParsePrefix("198.18.2.2/24"), 1600); err != nil {
		return nil, err
	}
	if err := n.mux.Sysctl("net.ipv4.ip_forward", "1"); err != nil {
		return nil, err
	}
	sinkMAC, err := n.sink.LinkMAC("eth0")
	if err != nil {
		return nil, err
	}
	eth1, err := n.mux.Netlink().LinkByName("eth1")
	if err != nil {
		return nil, err
	}
	for i := 0; i < servers; i++ {
		if err := n.mux.Netlink().NeighSet(&netlink.Neigh{LinkIndex: eth1.Attrs().Index, IP: net.IP(liveServer(i).AsSlice()),
			HardwareAddr: sinkMAC, State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V4}); err != nil {
			return nil, err
		}
	}
	if err := n.txNeighbours(); err != nil { // live_tx.go
		return nil, err
	}
	if n.genIf, err = n.gen.LinkIndex("eth0"); err != nil {
		return nil, err
	}
	if n.muxIf, err = n.mux.LinkIndex("eth0"); err != nil {
		return nil, err
	}
	// Each part on its own CPU where there are enough: generator on 0,
	// mux on 1, sink on 2; with two CPUs the sink shares the generator's.
	cpus := runtime.NumCPU()
	n.genCPU, n.muxCPU, n.sinkCPU = 0, min(1, cpus-1), min(2, cpus-1)
	if cpus == 2 {
		n.sinkCPU = 0
	}
	if n.sinkNAPI, err = napiThreads(); err != nil {
		return nil, err
	}
	drop, err := xdpDrop(n.sink, "eth0")
	if err != nil {
		return nil, err
	}
	n.links = append(n.links, drop)
	return n, nil
}

// threaded moves the sink's receive poll into its pinned NAPI thread; the
// mux's follows for every row measured after.
func (n *liveNet) threaded() (err error) {
	n.sinkThreads, err = threadNAPI(n.sink, "eth0", n.sinkCPU, n.sinkNAPI)
	return err
}

func xdpDrop(ns *netlab.Namespace, dev string) (link.Link, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.XDP, License: "Dual BSD/GPL",
		Instructions: xdpReturn(1 /* XDP_DROP */)})
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	idx, err := ns.LinkIndex(dev)
	if err != nil {
		return nil, err
	}
	var l link.Link
	err = ns.Do(func() (err error) {
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: idx, Flags: link.XDPDriverMode})
		return err
	})
	return l, err
}

func (n *liveNet) close() {
	for _, l := range n.links {
		l.Close()
	}
}

func liveInstance(strategy forwarding.Strategy, size uint32) (forwarding.Instance, *forwarding.Table, error) {
	return liveInstanceOn(strategy, size, liveServer)
}

// liveInstanceOn is liveInstance with the servers at server(i).
func liveInstanceOn(strategy forwarding.Strategy, size uint32, server func(int) netip.Addr) (forwarding.Instance, *forwarding.Table, error) {
	t := forwarding.NewTable(int(size))
	var backends []assign.Server
	for i := 0; i < servers; i++ {
		id := forwarding.ServerID(1025 + i)
		t.Servers[id] = forwarding.Server{Addr: server(i), State: forwarding.Active}
		backends = append(backends, assign.Server{ID: id, Weight: 1})
	}
	if strategy.Spec().MaglevTable {
		entries, err := assign.MaglevTable(backends, size)
		if err != nil {
			return forwarding.Instance{}, nil, err
		}
		for i, id := range entries {
			t.Buckets[i] = forwarding.Bucket{Current: id}
		}
	} else {
		for _, c := range assign.Rebalance(t.Buckets, backends, 0) {
			t.Buckets[c.Index] = forwarding.Bucket{Current: c.Bucket.Current}
		}
	}
	t.Generation = 1
	return forwarding.Instance{Name: "live", Strategy: strategy, VIPs: []netip.Addr{beamerVIP}, PortLow: 80, PortHigh: 80,
		Buckets: size, ChainWindow: forwarding.DefaultChainWindow}, t, nil
}

// RunLive sends minimum-size packets through a real mux on veth, for each
// strategy and table size, and reports the forwarded rate and the mux
// program's cost per packet from the kernel's BPF statistics.
func RunLive(o LiveOptions, progress io.Writer) ([]LiveRow, error) {
	lab, err := netlab.New("live")
	if err != nil {
		return nil, err
	}
	defer lab.Close()
	n, err := newLiveNet(lab)
	if err != nil {
		return nil, err
	}
	defer n.close()
	stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, fmt.Errorf("enabling BPF run-time statistics: %w", err)
	}
	defer stats.Close()

	var rows []LiveRow
	// First as the kernel does by default: every receive poll in softirq
	// on the CPU that woke it — the generator's — so generator, mux and
	// sink share CPU 0 (the figures of earlier versions of this bench).
	if o.Softirq && len(o.Beamer) > 0 {
		row, err := n.measure(forwarding.StrategyBeamer, o.Beamer[0], o)
		if err != nil {
			return nil, fmt.Errorf("beamer with %d buckets, softirq: %w", o.Beamer[0], err)
		}
		fmt.Fprintf(progress, "  live beamer %8d buckets, all in softirq on CPU 0: %.2f Mpps forwarded, %d refused at the mux's ring\n",
			row.Buckets, row.ForwardedMpps, row.DropsToMux)
		rows = append(rows, row)
	}
	if err := n.threaded(); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		s     forwarding.Strategy
		sizes []uint32
	}{{liveFloor, []uint32{0}}, {forwarding.StrategyBeamer, o.Beamer}, {forwarding.StrategyMaglev, o.Maglev}, {forwarding.StrategyAWFD, o.AWFD}} {
		for _, size := range c.sizes {
			row, err := n.measure(c.s, size, o)
			if err != nil {
				return nil, fmt.Errorf("%s with %d buckets: %w", c.s, size, err)
			}
			fmt.Fprintf(progress, "  live %-6s %8d buckets: %.2f Mpps forwarded, %.1f ns/packet in the mux program\n",
				row.Strategy, row.Buckets, row.ForwardedMpps, row.ProgramNs)
			rows = append(rows, row)
		}
	}
	if o.TX && len(o.Beamer) > 0 {
		for _, c := range []struct {
			s    forwarding.Strategy
			size uint32
		}{{liveFloor, 0}, {forwarding.StrategyBeamer, o.Beamer[0]}} {
			row, err := n.measureTX(c.s, c.size, o, nil)
			if err != nil {
				return nil, fmt.Errorf("%s with %d buckets, XDP_TX: %w", c.s, c.size, err)
			}
			fmt.Fprintf(progress, "  live %-6s %8d buckets, XDP_TX: %.2f Mpps forwarded, %.1f ns/packet on the mux's CPU\n",
				row.Strategy, row.Buckets, row.ForwardedMpps, row.MuxNs)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// liveFloor names the live rows of the encapsulation floor
// (encap_floor_live_bench): the mux's own path around its decision — a
// fixed outer header with the option, the sink's MACs, a redirect — and
// nothing else, on the same links, so the mux's rate has its floor beside it.
const liveFloor forwarding.Strategy = "encap-floor"

func (n *liveNet) measure(s forwarding.Strategy, size uint32, o LiveOptions) (LiveRow, error) {
	floor := s == liveFloor
	opts := dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.2.1"), ConnTrackEntries: 4 * o.Flows}
	var m *benchMux
	var err error
	if floor {
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
	prog := m.Program()
	if floor {
		prog = m.LiveFloorProgram()
		if err := n.setLiveFloor(m); err != nil {
			return LiveRow{}, err
		}
	} else if err := n.loadInstance(m.Mux, s, size); err != nil {
		return LiveRow{}, err
	}
	napi, err := napiThreads()
	if err != nil {
		return LiveRow{}, err
	}
	var attached link.Link
	if err := n.mux.Do(func() (err error) {
		if !floor {
			attached, err = m.Attach("eth0", dataplane.XDPDriver)
			return err
		}
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		attached, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifi.Index, Flags: link.XDPDriverMode})
		return err
	}); err != nil {
		return LiveRow{}, err
	}
	defer attached.Close()
	var muxThreads []int
	if n.sinkThreads != nil {
		if muxThreads, err = threadNAPI(n.mux, "eth0", n.muxCPU, napi); err != nil {
			return LiveRow{}, err
		}
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
	mux0, err := cpuNs(muxThreads)
	if err != nil {
		return LiveRow{}, err
	}
	sink0, err := cpuNs(n.sinkThreads)
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
	sink1, err := cpuNs(n.sinkThreads)
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
	counter := "fwd_bucket"
	stateful := s.Spec().ConnTable
	if stateful {
		counter = "ct_hit"
	}
	fwd := after[counter] - before[counter]
	if stateful {
		fwd += after["ct_miss"] - before["ct_miss"]
	}
	runs0, runs1 := stats0.RunCount, stats1.RunCount
	rt0, rt1 := stats0.Runtime, stats1.Runtime
	row := LiveRow{Strategy: string(s), Buckets: int(size), Flows: o.Flows, Sent: o.Packets, Forwarded: fwd, Seconds: took.Seconds()}
	if took > 0 {
		row.ForwardedMpps = float64(fwd) / took.Seconds() / 1e6
	}
	if runs1 > runs0 {
		row.ProgramNs = float64((rt1 - rt0).Nanoseconds()) / float64(runs1-runs0)
	}
	row.GenCPU, row.MuxCPU, row.SinkCPU = n.genCPU, n.muxCPU, n.sinkCPU
	row.GenNs = float64(genNs) / float64(o.Packets)
	if muxThreads == nil {
		// Softirq: the polls ran inside the generator's thread time.
		row.Softirq, row.MuxCPU, row.SinkCPU = true, n.genCPU, n.genCPU
	} else if fwd > 0 {
		row.MuxNs = float64(mux1-mux0) / float64(fwd)
		row.SinkNs = float64(sink1-sink0) / float64(fwd)
		row.MuxBusy = float64(mux1-mux0) / float64(took.Nanoseconds()+50e6)
	}
	row.Veth = map[string]map[string]uint64{}
	for k := range vethAfter {
		if d := statsDelta(vethBefore[k], vethAfter[k]); len(d) > 0 {
			row.Veth[k] = d
		}
	}
	// A veth refuses a frame when its peer's ring (256 frames) is full: the
	// sender counts it in tx_queue_N_xdp_xmit_errors and frees it.
	row.GenXmit = sumSuffix(row.Veth["gen/eth0"], "_xdp_xmit")
	row.DropsToMux = sumSuffix(row.Veth["gen/eth0"], "_xdp_xmit_errors")
	row.DropsToSink = sumSuffix(row.Veth["mux/eth1"], "_xdp_xmit_errors")
	// Frames the mux's redirects put in the sink's ring (the sink's own
	// count also holds the odd frame of the mux's stack, e.g. neighbour
	// discovery).
	row.Delivered = sumSuffix(row.Veth["mux/eth1"], "_xdp_xmit")
	if floor {
		// No decision counters: what it sent on is what the sink's
		// ring took or refused.
		row.Forwarded, row.Buckets = row.Delivered+row.DropsToSink, 0
		if took > 0 {
			row.ForwardedMpps = float64(row.Forwarded) / took.Seconds() / 1e6
		}
		if muxThreads != nil && row.Forwarded > 0 {
			row.MuxNs = float64(mux1-mux0) / float64(row.Forwarded)
			row.SinkNs = float64(sink1-sink0) / float64(row.Forwarded)
			row.MuxBusy = float64(mux1-mux0) / float64(took.Nanoseconds()+50e6)
		}
	}
	return row, nil
}

// loadGenerator loads the generator's program (the benchmark build of
// the mux, sending flows flows of one TCP ACK to the Beamer VIP, rotated
// by the bench's flow counter) with the mux's link as the frames'
// destination, and the frame it starts from; the caller closes it.
func (n *liveNet) loadGenerator(flows int) (*benchMux, []byte, error) {
	gen, err := loadBenchMux(dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.1.2")}, 0)
	if err != nil {
		return nil, nil, err
	}
	f := frame(beamerVIP, 80, wiretest.ACK)
	muxMAC, err := n.mux.LinkMAC("eth0")
	if err == nil {
		err = gen.SetBenchFlows(uint32(flows))
	}
	if err == nil {
		copy(f[0:6], muxMAC)
		err = gen.SetGenFrame([60]byte(f[:60]))
	}
	if err != nil {
		gen.Close()
		return nil, nil, err
	}
	return gen, f, nil
}

// loadInstance puts the live instance of strategy s with a table of size
// into m.
func (n *liveNet) loadInstance(m *dataplane.Mux, s forwarding.Strategy, size uint32) error {
	cfg, table, err := liveInstance(s, size)
	if err != nil {
		return err
	}
	if err := m.SetInstance(cfg, table); err != nil {
		return err
	}
	if err := publishNextHops(&benchMux{Mux: m}, cfg.Name, n.mux); err != nil {
		return err
	}
	if extra := liveExtra[s]; extra != nil {
		return extra(m, cfg, table)
	}
	return nil
}

// liveExtra loads what a strategy's live instance needs besides its table
// (live_NAME.go), by strategy.
var liveExtra = map[forwarding.Strategy]func(m *dataplane.Mux, cfg forwarding.Instance, t *forwarding.Table) error{}

// setLiveFloor points the floor program at the sink: the mux's eth1, its
// MAC as source, the sink's as destination.
func (n *liveNet) setLiveFloor(m *benchMux) error {
	sinkMAC, err := n.sink.LinkMAC("eth0")
	if err != nil {
		return err
	}
	muxMAC, err := n.mux.LinkMAC("eth1")
	if err != nil {
		return err
	}
	var ifindex int
	if err := n.mux.Do(func() error {
		ifi, err := net.InterfaceByName("eth1")
		if err == nil {
			ifindex = ifi.Index
		}
		return err
	}); err != nil {
		return err
	}
	return m.SetLiveFloor(ifindex, sinkMAC, muxMAC)
}

// sumSuffix sums the per-queue counters whose name ends in suffix (rx/tx
// queue N) — "_xdp_xmit" does not match "_xdp_xmit_errors".
func sumSuffix(st map[string]uint64, suffix string) uint64 {
	var n uint64
	for k, v := range st {
		if strings.HasSuffix(k, suffix) && strings.Contains(k, "_queue_") {
			n += v
		}
	}
	return n
}

// vethStats reads the veth counters of every hop.
func (n *liveNet) vethStats() (map[string]map[string]uint64, error) {
	out := map[string]map[string]uint64{}
	for _, h := range []struct {
		name string
		ns   *netlab.Namespace
		dev  string
	}{{"gen/eth0", n.gen, "eth0"}, {"mux/eth0", n.mux, "eth0"}, {"mux/eth1", n.mux, "eth1"}, {"sink/eth0", n.sink, "eth0"}} {
		st, err := ethtoolStats(h.ns, h.dev)
		if err != nil {
			return nil, err
		}
		out[h.name] = st
	}
	return out, nil
}

// printLive writes the live rows as a table.
func printLive(w io.Writer, rows []LiveRow) {
	fmt.Fprintln(w, "live traffic through a mux on veth (generator: XDP live frames, minimum-size packets; each part's CPU time from the kernel):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tsends\tbuckets\tflows\tsent\tdropped gen→mux\tforwarded\tdropped mux→sink\tdelivered\tforwarded Mpps\tmux program ns\tmux CPU ns/pkt\tmux busy\tgenerator CPU ns/pkt\tsink CPU ns/pkt\tCPUs gen/mux/sink\t")
	for _, l := range rows {
		mux, busy, sink, cpus := fmt.Sprintf("%.1f", l.MuxNs), fmt.Sprintf("%.0f%%", 100*l.MuxBusy), fmt.Sprintf("%.1f", l.SinkNs), fmt.Sprintf("%d/%d/%d", l.GenCPU, l.MuxCPU, l.SinkCPU)
		if l.Softirq {
			mux, busy, sink, cpus = "in generator's", "-", "in generator's", "0/0/0 softirq"
		}
		sends := "redirect"
		if l.TX {
			sends = "XDP_TX"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.2f\t%.1f\t%s\t%s\t%.1f\t%s\t%s\t\n", l.Strategy, sends, l.Buckets, l.Flows, l.Sent,
			l.DropsToMux, l.Forwarded, l.DropsToSink, l.Delivered, l.ForwardedMpps, l.ProgramNs, mux, busy, l.GenNs, sink, cpus)
	}
	tw.Flush()
}
