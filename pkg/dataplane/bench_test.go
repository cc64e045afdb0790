package dataplane

import (
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// benchMux loads the benchmark build with the vectors' instance, in a
// namespace where its route lookups succeed.
func benchMux(t testing.TB) (*wiretest.Vectors, *Mux, *muxBench) {
	v, err := wiretest.LoadVectors()
	must(t, err)
	netlabtest.RequireRoot(t)
	m, err := LoadMux(MuxOptions{Addr: v.Mux.MuxAddr, Benchmark: true})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	table, err := v.Mux.Table()
	must(t, err)
	must(t, m.SetInstance(v.Mux.Instance, table))
	return v, m, newMuxBenchTB(t, &v.Mux)
}

// repeatRun runs prog repeat times in one BPF_PROG_TEST_RUN, as received on
// the bench's eth0, and returns the time per run (one syscall's overhead is
// spread over all repetitions); the counter must move by exactly repeat,
// which proves every run took the measured path.
func repeatRun(t testing.TB, m *Mux, b *muxBench, prog *ebpf.Program, in []byte, repeat int, counter string) time.Duration {
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
	v, m, b := benchMux(t)
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
	v, m, bench := benchMux(b)
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
