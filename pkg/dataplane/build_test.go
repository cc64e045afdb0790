package dataplane

import (
	"net/netip"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
)

// withExtra is a build of spec with one more program, as another build of
// the same source would have: a copy of its first program under another
// name.
func withExtra(t *testing.T, spec *ebpf.CollectionSpec, of string) *ebpf.CollectionSpec {
	t.Helper()
	p := spec.Programs[of].Copy()
	p.Name = "extra_copy"
	spec.Programs["extra_copy"] = p
	return spec
}

// TestMuxSpecLoadsWhole: MuxOptions.Spec is loaded whole, on the mux's own
// maps (its extra program reads the same tables), handed out by
// Collection, and left as the caller passed it; without it Collection is
// nil.
func TestMuxSpecLoadsWhole(t *testing.T) {
	netlabtest.RequireRoot(t)
	spec, err := loadMux()
	must(t, err)
	spec = withExtra(t, spec, "beamer_mux")
	before := spec.Variables["mux_addr"]
	var addr [4]byte
	must(t, before.Get(&addr))
	m, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), Spec: spec})
	must(t, err)
	defer m.Close()
	var after [4]byte
	must(t, spec.Variables["mux_addr"].Get(&after))
	if after != addr {
		t.Errorf("LoadMux changed the caller's spec: mux_addr %v, was %v", after, addr)
	}
	c := m.Collection()
	if c == nil || c.Programs["extra_copy"] == nil || c.Programs["beamer_mux"] != m.Program() {
		t.Fatalf("Collection does not hold the whole build: %v", c)
	}
	// The extra program shares the mux's maps: the same map ids.
	extra, err := c.Programs["extra_copy"].Info()
	must(t, err)
	own, err := m.Program().Info()
	must(t, err)
	ids, _ := extra.MapIDs()
	ownIDs, _ := own.MapIDs()
	shared := map[ebpf.MapID]bool{}
	for _, id := range ownIDs {
		shared[id] = true
	}
	for _, id := range ids {
		if !shared[id] {
			t.Errorf("the extra program uses map %d, which the mux's program does not", id)
		}
	}
	var word [4]byte
	must(t, c.Variables["mux_addr"].Get(&word))
	if word != [4]byte{198, 18, 0, 1} {
		t.Errorf("the loaded build's mux_addr is %v: constants not set as for the embedded build", word)
	}

	plain, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1")})
	must(t, err)
	defer plain.Close()
	if plain.Collection() != nil {
		t.Error("the embedded build has a Collection")
	}
}

// TestAgentSpecLoadsWhole is TestMuxSpecLoadsWhole for the agent.
func TestAgentSpecLoadsWhole(t *testing.T) {
	netlabtest.RequireRoot(t)
	spec, err := loadAgent()
	must(t, err)
	spec = withExtra(t, spec, "beamer_agent")
	vip := netip.MustParseAddr("198.18.100.1")
	opts := AgentOptions{Addr: netip.MustParseAddr("198.18.0.10"), Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []AgentVIP{{VIP: vip, Buckets: 16, ChainWindow: time.Minute}}, GenerationMemory: -1, Spec: spec}
	a, err := LoadAgent(opts)
	must(t, err)
	defer a.Close()
	c := a.Collection()
	if c == nil || c.Programs["extra_copy"] == nil || c.Programs["beamer_agent"] != a.Program() {
		t.Fatalf("Collection does not hold the whole build: %v", c)
	}
	opts.Spec = nil
	plain, err := LoadAgent(opts)
	must(t, err)
	defer plain.Close()
	if plain.Collection() != nil {
		t.Error("the embedded build has a Collection")
	}
}
