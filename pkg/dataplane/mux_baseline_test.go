package dataplane

import (
	"bytes"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// TestLoadBaselineRefusesOtherObjects: the compare mode only loads a
// benchmark build of the mux that reads this build's maps; the production
// object (no benchmark programs) and the agent's benchmark build are
// refused with the reason.
func TestLoadBaselineRefusesOtherObjects(t *testing.T) {
	netlabtest.RequireRoot(t)
	m, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), Benchmark: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for name, c := range map[string]struct {
		obj  []byte
		want string
	}{
		"production mux": {_MuxBytes, "no program beamer_mux_bench"},
		"agent bench":    {_AgentBenchBytes, "no program beamer_mux_bench"},
		"garbage":        {[]byte("not an ELF object"), "baseline object"},
		// As a build from before the random order: no such variable.
		"insertion order": {bytes.ReplaceAll(MuxBenchObject(), []byte("bench_order_version"), []byte("bench_order_versioX")), "insertion order"},
	} {
		if _, err := m.LoadBaseline(c.obj); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
	b, err := m.LoadBaseline(MuxBenchObject())
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
	m, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), Benchmark: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	obj := bytes.ReplaceAll(MuxBenchObject(), []byte("mux_vip_packet"), []byte("mux_vip_packeX"))
	b, err := m.LoadBaseline(obj)
	if err != nil {
		t.Fatalf("baseline with a map of its own: %v", err)
	}
	defer b.Close()
	if !slices.Equal(b.Private, []string{"mux_vip_packeX"}) {
		t.Errorf("private maps %q, want [mux_vip_packeX]", b.Private)
	}
	own, err := m.LoadBaseline(MuxBenchObject())
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
