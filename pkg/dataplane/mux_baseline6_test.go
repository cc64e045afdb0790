package dataplane

import (
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// TestBaselineKeepsTailCalls: loading a baseline on a mux's maps leaves
// the mux's tail call to its own IPv6 program (each build keeps its own
// program array), so the compare mode measures each build's IPv6 path.
func TestBaselineKeepsTailCalls(t *testing.T) {
	netlabtest.RequireRoot(t)
	m, err := LoadMux(MuxOptions{Addr: mux6AddrV4, Addr6: mux6Addr, Benchmark: true})
	must(t, err)
	defer m.Close()
	info, err := m.objs.BeamerMux6.Info()
	must(t, err)
	want, _ := info.ID()
	b, err := m.LoadBaseline(MuxBenchObject())
	must(t, err)
	defer b.Close()
	var id ebpf.ProgramID
	must(t, m.objs.Mux6Prog.Lookup(uint32(0), &id))
	if id != want {
		t.Fatalf("the mux's IPv6 tail call goes to program %d, not its own %d, after the baseline loaded", id, want)
	}
}
