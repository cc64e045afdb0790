package dataplane

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// xdpMD is struct xdp_md, the context of an XDP test run.
type xdpMD struct {
	Data, DataEnd, DataMeta, IngressIfindex, RxQueueIndex, EgressIfindex uint32
}

var xdpActions = map[uint32]string{1: "drop", 2: "pass", 3: "tx", 4: "redirect"}

// muxBench is a namespace in which the route lookups of the vectors' mux
// scenario end as the vectors say: servers on eth0's subnet, a subnet behind
// the gateway 198.18.0.2, a subnet on eth1, a neighbour never resolved and an
// address with no route.
type muxBench struct {
	ns      *netlab.Namespace
	ifindex int
}

func newMuxBench(t *testing.T, s *wiretest.MuxScenario) *muxBench { return newMuxBenchTB(t, s) }

func newMuxBenchTB(t testing.TB, s *wiretest.MuxScenario) *muxBench {
	v := netlabtest.NewVectorNet(t, s)
	return &muxBench{ns: v.NS, ifindex: v.Ifindex}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runXDP runs prog once on frame in ns and returns the action and output.
// It runs on CPU 0, so that runs see the same per-CPU state (connection
// table, next-hop cache) one after the other.
func runXDP(t testing.TB, ns *netlab.Namespace, ifindex int, prog *ebpf.Program, frame []byte) (string, []byte) {
	t.Helper()
	opts := &ebpf.RunOptions{Data: frame, DataOut: make([]byte, len(frame)+256),
		Context: xdpMD{DataEnd: uint32(len(frame)), IngressIfindex: uint32(ifindex)}}
	var ret uint32
	must(t, ns.DoOnCPU(0, func() (err error) {
		ret, err = prog.Run(opts)
		return err
	}))
	return xdpActions[ret], opts.DataOut
}

func loadVectorMux(t *testing.T) (*wiretest.Vectors, *Mux) {
	v, m, _, _ := loadVectorMuxAs(t, nil)
	return v, m
}

// loadVectorMuxAs loads the vector scenario's mux with its instance and
// table as reshape leaves them (nil: as the vectors have them).
func loadVectorMuxAs(t *testing.T, reshape func(*forwarding.Instance, **forwarding.Table)) (*wiretest.Vectors, *Mux, forwarding.Instance, *forwarding.Table) {
	v, err := wiretest.LoadVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	m, err := LoadMux(MuxOptions{Addr: v.Mux.MuxAddr})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Mux.Table()
	must(t, err)
	inst := v.Mux.Instance
	if reshape != nil {
		reshape(&inst, &table)
	}
	must(t, m.SetInstance(inst, table))
	return v, m, inst, table
}

// TestMuxVectors runs every mux case of testdata/vectors.json through the
// XDP program and checks the action, the counter and the exact output bytes.
func TestMuxVectors(t *testing.T) {
	v, m := loadVectorMux(t)
	runMuxCases(t, m, newMuxBench(t, &v.Mux), v.Mux.Cases)
}

// TestMaglevVectors does the same for the Maglev strategy's cases, in order
// (they fill the connection table).
func TestMaglevVectors(t *testing.T) {
	v, err := wiretest.LoadVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	m, err := LoadMux(MuxOptions{Addr: v.Maglev.MuxAddr, ConnTrackEntries: 4096})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Maglev.Table()
	must(t, err)
	must(t, m.SetInstance(v.Maglev.Instance, table))
	runMuxCases(t, m, newMuxBench(t, &v.Mux), v.Maglev.Cases)
}

func runMuxCases(t *testing.T, m *Mux, bench *muxBench, cases []wiretest.PacketCase) {
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			in, err := hex.DecodeString(c.Input)
			must(t, err)
			before, err := m.Counters()
			must(t, err)
			action, out := runXDP(t, bench.ns, bench.ifindex, m.Program(), in)
			after, err := m.Counters()
			must(t, err)
			if action != c.Action {
				t.Errorf("action %s, want %s", action, c.Action)
			}
			if d := after[c.Counter] - before[c.Counter]; d != 1 {
				t.Errorf("counter %s moved by %d, want 1 (after %v)", c.Counter, d, after)
			}
			if c.Output != "" {
				want, _ := hex.DecodeString(c.Output)
				if !bytes.Equal(out, want) {
					t.Errorf("output differs\n got %x\nwant %x", out, want)
				}
			}
		})
	}
}

// TestFlushNextHopsAfterClose: the daemon's route watcher may deliver one
// more change after the mux closed (an upgrade exit crashed on it once,
// writing to the unmapped epoch); it must be a no-op.
func TestFlushNextHopsAfterClose(t *testing.T) {
	netlabtest.RequireRoot(t)
	m, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1")})
	must(t, err)
	must(t, m.Close())
	m.FlushNextHops()
}
