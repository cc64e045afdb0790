package dataplane

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// TestAgentSeenLayoutUpgrade: an agent started over the pinned
// generation_seen of an agent before issue 27 (one 64-bit word per element,
// slot*2 and slot*2+1), which it cannot adopt, keeps the newest state that
// map remembered (agent_seen_layout.go) and pins its own layout in its
// place; the next agent adopts that one as it is. A pinned map of other
// words (here: of another size) is not read.
func TestAgentSeenLayoutUpgrade(t *testing.T) {
	pins := netlabtest.PinDir(t, "seen")
	ip := netip.MustParseAddr
	opts := AgentOptions{Addr: ip("198.18.0.11"), Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []AgentVIP{{VIP: ip("198.18.100.1"), Buckets: 100, ChainWindow: time.Minute},
			{VIP: ip("198.18.100.2"), Buckets: 10}},
		GenerationMemory: -1, PinDir: pins}
	must(t, ensureBPFFS(pins))
	state := agentStateDir(pins, opts.VIPs)
	must(t, os.MkdirAll(state, 0o700))
	pinOld := func(entries uint32, words map[uint32]uint64) {
		t.Helper()
		m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: entries, Flags: unix.BPF_F_MMAPABLE})
		must(t, err)
		defer m.Close()
		for k, w := range words {
			must(t, m.Put(k, w))
		}
		path := filepath.Join(state, "generation_seen")
		os.Remove(path)
		must(t, m.Pin(path))
	}
	const first, second = 7<<32 | 5, 7<<32 | 9
	// VIP 0: newest in its word of the previous period; VIP 1: in the current one.
	pinOld(2*1024, map[uint32]uint64{0: first, 1: 7<<32 | 4, 2: 3, 3: second})
	load := func() *Agent {
		t.Helper()
		a, err := LoadAgent(opts)
		must(t, err)
		return a
	}
	a := load()
	if got := [2]uint64{a.NewestSeen(0), a.NewestSeen(1)}; got != [2]uint64{first, second} {
		t.Errorf("after the upgrade: newest seen %#x, want %#x", got, [2]uint64{first, second})
	}
	m, err := ebpf.LoadPinnedMap(filepath.Join(state, "generation_seen"), nil)
	must(t, err)
	if m.ValueSize() != 16 || m.MaxEntries() != 1024 {
		t.Errorf("pinned generation_seen after the upgrade: %d × %d bytes, want 1024 × 16", m.MaxEntries(), m.ValueSize())
	}
	m.Close()
	a.SetNewestSeen(1, second+1)
	a.Close()

	b := load() // adopts its predecessor's map of the new layout
	if got := [2]uint64{b.NewestSeen(0), b.NewestSeen(1)}; got != [2]uint64{first, second + 1} {
		t.Errorf("after a restart: newest seen %#x, want %#x", got, [2]uint64{first, second + 1})
	}
	b.Close()

	pinOld(2*1024+2, map[uint32]uint64{0: first}) // words of another layout
	c := load()
	defer c.Close()
	if got := c.NewestSeen(0); got != 0 {
		t.Errorf("over a pinned map of another size: newest seen %#x, want 0 (a new map)", got)
	}
}

// TestAgentRotateForgetsOneWord: each turn of the memory period clears the
// word of the period before last, and that word alone, in every VIP slot
// (both words are one element now): the newest seen of the period that
// just ended survives one turn and is gone after the second.
func TestAgentRotateForgetsOneWord(t *testing.T) {
	netlabtest.RequireRoot(t)
	ip := netip.MustParseAddr
	a, err := LoadAgent(AgentOptions{Addr: ip("198.18.0.11"), Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []AgentVIP{{VIP: ip("198.18.100.1"), Buckets: 10}, {VIP: ip("198.18.100.2"), Buckets: 10}}, GenerationMemory: -1})
	must(t, err)
	defer a.Close()
	a.SetNewestSeen(0, 7<<32|5) // word 0, the current period's (the selector starts at 0)
	a.SetNewestSeen(1, 7<<32|9)
	a.Rotate() // clears word 1, now current
	if got := [2]uint64{a.NewestSeen(0), a.NewestSeen(1)}; got != [2]uint64{7<<32 | 5, 7<<32 | 9} {
		t.Fatalf("after one turn: newest seen %#x, want both kept (the previous period's word)", got)
	}
	a.Rotate() // clears word 0
	if got := [2]uint64{a.NewestSeen(0), a.NewestSeen(1)}; got != [2]uint64{0, 0} {
		t.Fatalf("after two turns: newest seen %#x, want both forgotten", got)
	}
}
