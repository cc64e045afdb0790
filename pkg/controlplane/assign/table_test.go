package assign

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// builder is one of the stateless lookup-table algorithms.
type builder struct {
	name string
	// minimal: removing a server or lowering its weight only changes
	// entries to or from that server (consistent and rendezvous hashing).
	minimal bool
	build   func([]Server, uint32) ([]forwarding.ServerID, error)
}

var builders = []builder{
	{"maglev", false, MaglevTable},
	{"ring", true, func(s []Server, n uint32) ([]forwarding.ServerID, error) { return RingTable(s, 20, n) }},
	{"rendezvous", true, RendezvousTable},
}

// TestTablesGolden pins the tables of a small case: every controller and mux
// version must build the same table from the same servers, so a change of
// hash or tie-break must show up here.
func TestTablesGolden(t *testing.T) {
	servers := []Server{{a, 1}, {b, 1}, {c, 2}}
	want := map[string]string{
		"maglev":     "[1027 1025 1027 1027 1026 1027 1027 1027 1025 1027 1025 1026 1026]",
		"ring":       "[1026 1027 1025 1026 1027 1027 1025 1025 1026 1025 1027 1026 1027]",
		"rendezvous": "[1025 1027 1025 1025 1025 1027 1026 1025 1026 1027 1027 1027 1025]",
	}
	for _, bl := range builders {
		got, err := bl.build(servers, 13)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != want[bl.name] {
			t.Errorf("%s: %v, want %s", bl.name, got, want[bl.name])
		}
	}
}

func TestTablesRejectBadInput(t *testing.T) {
	for _, bl := range builders {
		for _, in := range []struct {
			s []Server
			n uint32
		}{{[]Server{{a, 1}, {a, 1}}, 13}, {[]Server{{7, 1}}, 13}, {[]Server{{a, 1}}, 0}, {[]Server{{a, 1}}, MaxTableSize + 1}} {
			if _, err := bl.build(in.s, in.n); err == nil {
				t.Errorf("%s accepted %v size %d", bl.name, in.s, in.n)
			}
		}
	}
	if _, err := MaglevTable([]Server{{a, 1}}, 65536); !errors.Is(err, ErrTable) {
		t.Error("Maglev accepted a table size that is not prime")
	}
	if _, err := MaglevTable([]Server{{a, 1}, {b, 1}, {c, 1}}, 2); !errors.Is(err, ErrTable) {
		t.Error("Maglev accepted more backends than entries")
	}
	if _, err := RingTable([]Server{{a, 1}}, 0, 13); !errors.Is(err, ErrTable) {
		t.Error("ring accepted 0 virtual nodes")
	}
	if _, err := RingTable([]Server{{a, 1 << 20}}, 100, 13); !errors.Is(err, ErrTable) {
		t.Error("ring accepted 10⁸ points")
	}
}

// TestTablesRandomSequences applies random adds, removals, drains and
// weight changes to every builder and checks its invariants each time.
func TestTablesRandomSequences(t *testing.T) {
	const size = 1009
	for _, bl := range builders {
		for seed := range uint64(15) {
			r := rand.New(rand.NewPCG(seed, 3))
			var servers []Server
			var prev []forwarding.ServerID
			for step := range 25 {
				shrunk := forwarding.NoServer // a server removed or lightened
				switch op := r.IntN(10); {
				case op < 4 || len(servers) == 0:
					servers = append(servers, Server{forwarding.ServerID(1025 + r.IntN(2000)), uint32(1 + r.IntN(3))})
					if CheckServers(servers) != nil {
						servers = servers[:len(servers)-1]
					}
				case op < 7:
					i := r.IntN(len(servers))
					shrunk = servers[i].ID
					servers = slices.Delete(servers, i, i+1)
				default:
					i := r.IntN(len(servers))
					if w := uint32(r.IntN(int(servers[i].Weight) + 1)); w < servers[i].Weight {
						shrunk = servers[i].ID
						servers[i].Weight = w
					}
				}
				name := fmt.Sprintf("%s/seed%d/step%d", bl.name, seed, step)
				got, err := bl.build(servers, size)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				shuffled := slices.Clone(servers)
				r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				if again, _ := bl.build(shuffled, size); !slices.Equal(got, again) {
					t.Fatalf("%s: table depends on the order servers are listed in", name)
				}
				checkOwners(t, name, got, servers)
				if bl.name == "maglev" {
					checkMaglevShares(t, name, got, servers)
				}
				if bl.minimal && prev != nil && shrunk != forwarding.NoServer {
					for i := range got {
						if got[i] != prev[i] && prev[i] != shrunk {
							t.Fatalf("%s: entry %d moved from %d to %d though only %d shrank", name, i, prev[i], got[i], shrunk)
						}
					}
				}
				prev = got
			}
		}
	}
}

func checkOwners(t *testing.T, name string, table []forwarding.ServerID, servers []Server) {
	t.Helper()
	weight := map[forwarding.ServerID]uint32{}
	any := false
	for _, s := range servers {
		weight[s.ID] = s.Weight
		any = any || s.Weight > 0
	}
	for i, o := range table {
		if any && weight[o] == 0 || !any && o != forwarding.NoServer {
			t.Fatalf("%s: entry %d owned by %d, not a server of positive weight", name, i, o)
		}
	}
}

// checkMaglevShares: turns are proportional to weight, so every backend's
// entry count is within 2 of its exact weighted share.
func checkMaglevShares(t *testing.T, name string, table []forwarding.ServerID, servers []Server) {
	t.Helper()
	var total float64
	for _, s := range servers {
		total += float64(s.Weight)
	}
	counts := Counts(table)
	for _, s := range servers {
		if s.Weight == 0 {
			continue
		}
		share := float64(len(table)) * float64(s.Weight) / total
		if d := float64(counts[s.ID]) - share; d > 2 || d < -2 {
			t.Fatalf("%s: backend %d (weight %d) has %d entries, share %.1f", name, s.ID, s.Weight, counts[s.ID], share)
		}
	}
}

func BenchmarkMaglevTable(b *testing.B) {
	backends := scaleServers(1000)
	for _, size := range []uint32{MaglevSmallTable, MaglevLargeTable} {
		b.Run(fmt.Sprintf("backends1000/size%d", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := MaglevTable(backends, size); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
