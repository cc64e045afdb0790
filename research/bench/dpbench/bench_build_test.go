package dpbench

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// The benchmark builds as loaded through dataplane.MuxOptions.Spec: the
// tests that lived in pkg/dataplane (bench_test.go, mux_baseline_test.go,
// mux_baseline6_test.go) while the builds were compiled there.

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// vectorNet is a namespace in which the route lookups of the vectors' mux
// scenario end as the vectors say (pkg/dataplane's muxBench rig): servers
// on eth0's subnet, a subnet behind the gateway 198.18.0.2, a subnet on
// eth1.
type vectorNet struct {
	ns      *netlab.Namespace
	ifindex int
}

func newVectorNet(t testing.TB, s *wiretest.MuxScenario) *vectorNet {
	v := netlabtest.NewVectorNet(t, s)
	return &vectorNet{ns: v.NS, ifindex: v.Ifindex}
}

// vectorBenchMux loads the benchmark build with the vectors' instance, in
// a namespace where its route lookups succeed.
func vectorBenchMux(t testing.TB) (*wiretest.Vectors, *benchMux, *vectorNet) {
	v, err := wiretest.LoadVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	m, err := loadBenchMux(dataplane.MuxOptions{Addr: v.Mux.MuxAddr}, 0)
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Mux.Table()
	must(t, err)
	must(t, m.SetInstance(v.Mux.Instance, table))
	return v, m, newVectorNet(t, &v.Mux)
}

// repeatRun runs prog repeat times in one BPF_PROG_TEST_RUN, as received on
// the bench's eth0, and returns the time per run (one syscall's overhead is
// spread over all repetitions); the counter must move by exactly repeat,
// which proves every run took the measured path.
func repeatRun(t testing.TB, m *benchMux, b *vectorNet, prog *ebpf.Program, in []byte, repeat int, counter string) time.Duration {
	t.Helper()
	before, err := m.Counters()
	must(t, err)
	var per time.Duration
	var ret uint32
	must(t, b.ns.Do(func() (err error) {
		start := time.Now()
		ret, err = prog.Run(&ebpf.RunOptions{Data: in, Repeat: uint32(repeat),
			Context: xdpMD{DataEnd: uint32(len(in)), IngressIfindex: uint32(b.ifindex)}})
		per = time.Since(start) / time.Duration(repeat)
		return err
	}))
	if ret != 3 {
		t.Fatalf("%s: returned %d, want XDP_TX", counter, ret)
	}
	if counter != "" {
		after, err := m.Counters()
		must(t, err)
		if d := after[counter] - before[counter]; d != uint64(repeat) {
			t.Fatalf("path not taken every run: %s moved by %d over %d runs", counter, d, repeat)
		}
	}
	return per
}

func vectorInput(t testing.TB, v *wiretest.Vectors, name string) []byte {
	for _, c := range v.Mux.Cases {
		if c.Name == name {
			b, _ := hex.DecodeString(c.Input)
			return b
		}
	}
	t.Fatalf("no vector %q", name)
	return nil
}

// TestMuxBenchmarkPath is the CI smoke of the benchmark: the benchmark build
// forwards every repetition (counter check) and leaves the packet as it was.
func TestMuxBenchmarkPath(t *testing.T) {
	v, m, b := vectorBenchMux(t)
	in := vectorInput(t, v, "syn to bucket owned by on-link server")
	repeatRun(t, m, b, m.BenchProgram(), in, 1000, "fwd_bucket")
	repeatRun(t, m, b, m.BenchProgram(), vectorInput(t, v, "mptcp subflow to server id port, no option"), 1000, "fwd_server_id")
	repeatRun(t, m, b, m.EmptyProgram(), in, 1000, "")
	out := make([]byte, len(in)+64)
	opts := &ebpf.RunOptions{Data: in, DataOut: out, Repeat: 3, Context: xdpMD{DataEnd: uint32(len(in)), IngressIfindex: uint32(b.ifindex)}}
	must(t, b.ns.Do(func() error { _, err := m.BenchProgram().Run(opts); return err }))
	if hex.EncodeToString(opts.DataOut) != hex.EncodeToString(in) {
		t.Fatalf("benchmark build did not restore the packet:\n got %x\nwant %x", opts.DataOut, in)
	}
}

// BenchmarkMuxFastPath reports the mux's cost per packet measured inside the
// kernel (repeat mode, encapsulation undone each run) next to an empty XDP
// program measured in the same run.
func BenchmarkMuxFastPath(b *testing.B) {
	v, m, bench := vectorBenchMux(b)
	const repeat = 1_000_000
	cases := []struct{ name, vector, counter string }{
		{"bucket", "syn to bucket owned by on-link server", "fwd_bucket"},
		{"bucket-with-previous", "bucket with previous owner carries it in the option", "fwd_bucket"},
		{"server-id", "mptcp subflow to server id port, no option", "fwd_server_id"},
	}
	for i := 0; i < b.N; i++ {
		empty := repeatRun(b, m, bench, m.EmptyProgram(), vectorInput(b, v, cases[0].vector), repeat, "")
		b.ReportMetric(float64(empty.Nanoseconds()), "empty-ns/pkt")
		for _, c := range cases {
			per := repeatRun(b, m, bench, m.BenchProgram(), vectorInput(b, v, c.vector), repeat, c.counter)
			b.ReportMetric(float64(per.Nanoseconds()), c.name+"-ns/pkt")
			b.ReportMetric(float64(per.Nanoseconds()-empty.Nanoseconds()), c.name+"-net-ns/pkt")
			fmt.Printf("mux %-22s %4d ns/packet (empty program %d ns, net %d ns, %.2f Mpps/core)\n", c.name,
				per.Nanoseconds(), empty.Nanoseconds(), per.Nanoseconds()-empty.Nanoseconds(), 1e3/float64(per.Nanoseconds()))
		}
	}
}

// productionMuxObject is the production build of the mux as committed
// (pkg/dataplane/mux_bpfel.o, which the beamer binary embeds).
func productionMuxObject(t *testing.T) []byte {
	obj, err := os.ReadFile("../../../pkg/dataplane/mux_bpfel.o")
	must(t, err)
	return obj
}

// TestLoadBaselineRefusesOtherObjects: the compare mode only loads a
// benchmark build of the mux that reads this build's maps; the production
// object (no benchmark programs) and the agent's benchmark build are
// refused with the reason.
func TestLoadBaselineRefusesOtherObjects(t *testing.T) {
	netlabtest.RequireRoot(t)
	m, err := loadBenchMux(dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.0.1")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for name, c := range map[string]struct {
		obj  []byte
		want string
	}{
		"production mux": {productionMuxObject(t), "no program beamer_mux_bench"},
		"agent bench":    {AgentBenchObject(), "no program beamer_mux_bench"},
		"garbage":        {[]byte("not an ELF object"), "baseline object"},
		// As a build from before the random order: no such variable.
		"insertion order": {bytes.ReplaceAll(MuxBenchObject(), []byte("bench_order_version"), []byte("bench_order_versioX")), "insertion order"},
	} {
		if _, err := m.loadBaseline(c.obj); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
	b, err := m.loadBaseline(MuxBenchObject())
	if err != nil {
		t.Fatalf("this build's own object: %v", err)
	}
	b.Close()
}

// TestLoadBaselineOwnMaps: a baseline with a map this build does not have
// (here: a map renamed in the object) gets its own, empty, and says so,
// instead of the compare mode refusing it; the maps both have stay shared.
func TestLoadBaselineOwnMaps(t *testing.T) {
	netlabtest.RequireRoot(t)
	m, err := loadBenchMux(dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.0.1")}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	obj := bytes.ReplaceAll(MuxBenchObject(), []byte("mux_vip_traffic"), []byte("mux_vip_traffiX"))
	b, err := m.loadBaseline(obj)
	if err != nil {
		t.Fatalf("baseline with a map of its own: %v", err)
	}
	defer b.Close()
	if !slices.Equal(b.Private, []string{"mux_vip_traffiX"}) {
		t.Errorf("private maps %q, want [mux_vip_traffiX]", b.Private)
	}
	own, err := m.loadBaseline(MuxBenchObject())
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	if len(own.Private) != 0 {
		t.Errorf("this build's own object has private maps %q", own.Private)
	}
}

// TestMapDifferenceSeesLayout: maps of the same sizes whose values are laid
// out differently (fields swapped) are not compatible.
func TestMapDifferenceSeesLayout(t *testing.T) {
	u32 := &btf.Int{Name: "u32", Size: 4}
	mk := func(a, b string) *ebpf.MapSpec {
		return &ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 1,
			Value: &btf.Struct{Name: "v", Size: 8, Members: []btf.Member{{Name: a, Type: u32}, {Name: b, Type: u32, Offset: 32}}}}
	}
	if d := mapDifference(mk("id", "gen"), mk("id", "gen")); d != "" {
		t.Errorf("same layout: %s", d)
	}
	if d := mapDifference(mk("id", "gen"), mk("gen", "id")); d == "" {
		t.Error("swapped fields not seen")
	}
	other := mk("id", "gen")
	other.ValueSize = 16
	if d := mapDifference(mk("id", "gen"), other); d == "" {
		t.Error("value size not seen")
	}
}

// TestBaselineKeepsTailCalls: loading a baseline on a mux's maps leaves
// the mux's tail call to its own IPv6 program (each build keeps its own
// program array), so the compare mode measures each build's IPv6 path.
func TestBaselineKeepsTailCalls(t *testing.T) {
	netlabtest.RequireRoot(t)
	m, err := loadBenchMux(dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), Addr6: mux6Addr}, 0)
	must(t, err)
	defer m.Close()
	info, err := m.Collection().Programs["beamer_mux6"].Info()
	must(t, err)
	want, _ := info.ID()
	b, err := m.loadBaseline(MuxBenchObject())
	must(t, err)
	defer b.Close()
	var id ebpf.ProgramID
	must(t, m.Collection().Maps["mux6_prog"].Lookup(uint32(0), &id))
	if id != want {
		t.Fatalf("the mux's IPv6 tail call goes to program %d, not its own %d, after the baseline loaded", id, want)
	}
}

// TestBenchPublishesNextHops: a mux the bench loads has every server's
// next hop published, as the daemon would (the rows take the published
// path), each the bench namespace's neighbour; the production program
// sends by it.
func TestBenchPublishesNextHops(t *testing.T) {
	netlabtest.RequireRoot(t)
	r, err := newRig()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	o := Quick
	o.ns = r.ns
	cfg, table := beamerInstance(1000, 0)
	m, err := loadMux(cfg, table, 0, o)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i := 0; i < servers; i++ {
		h, ok := m.PublishedNextHop(serverAddr(i))
		want := net.HardwareAddr{0x02, 0xbe, 0xa0, 0x00, 0x02, byte(i)}
		if !ok || !bytes.Equal(h.Dst, want) || h.Ifindex != uint32(r.ifindex) {
			t.Errorf("server %v: published %v (%v), want %v on device %d", serverAddr(i), h, ok, want, r.ifindex)
		}
	}
}
