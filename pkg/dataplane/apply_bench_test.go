package dataplane

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// instanceOf builds a balanced instance of n DIPs with 100 buckets each.
func instanceOf(n int) (forwarding.Instance, *forwarding.Table, []assign.Server) {
	t := forwarding.NewTable(n * 100)
	servers := make([]assign.Server, n)
	for i := range servers {
		id := forwarding.ServerID(1025 + i)
		t.Servers[id] = forwarding.Server{Addr: netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), State: forwarding.Active}
		servers[i] = assign.Server{ID: id, Weight: 1}
	}
	for _, c := range assign.Rebalance(t.Buckets, servers, 0) {
		t.Buckets[c.Index] = c.Bucket
	}
	cfg := forwarding.Instance{Name: "scale", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		PortLow: 80, PortHigh: 80, Buckets: uint32(n * 100), ChainWindow: forwarding.DefaultChainWindow}
	return cfg, t, servers
}

// BenchmarkMuxSetInstance: loading a whole table into the kernel (a mux's
// cold start or resync) at the paper's largest instance, 64K DIPs × 100.
func BenchmarkMuxSetInstance(b *testing.B) {
	netlabtest.RequireRoot(b)
	cfg, t, _ := instanceOf(64000)
	m, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1")})
	must(b, err)
	defer m.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t.Generation = uint32(i + 1)
		must(b, m.SetInstance(cfg, t))
	}
	b.ReportMetric(float64(len(t.Buckets)), "buckets")
}

// BenchmarkMuxApplyAddDIP: applying the generation that adds one DIP (it
// takes ~100 buckets from the others) at 1K, 10K and 64K DIPs.
func BenchmarkMuxApplyAddDIP(b *testing.B) {
	netlabtest.RequireRoot(b)
	for _, n := range []int{1000, 10000, 64000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			cfg, t, servers := instanceOf(n)
			m, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1")})
			must(b, err)
			defer m.Close()
			must(b, m.SetInstance(cfg, t))
			newID := forwarding.ServerID(1025 + n)
			add := forwarding.ServerChange{ID: newID, Server: forwarding.Server{Addr: netip.MustParseAddr("198.19.0.1"), State: forwarding.Active}}
			changes := assign.Rebalance(t.Buckets, append(servers, assign.Server{ID: newID, Weight: 1}), 100)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Alternate adding and taking back the DIP, so every
				// iteration applies a real add-DIP-sized generation.
				b.StopTimer()
				cur, _ := m.Generation("scale")
				d := &forwarding.Delta{Generation: cur + 1, Servers: []forwarding.ServerChange{add}, Buckets: changes}
				undo := &forwarding.Delta{Generation: cur + 2, Servers: []forwarding.ServerChange{{ID: newID, Remove: true}}}
				for _, c := range changes {
					undo.Buckets = append(undo.Buckets, forwarding.BucketChange{Index: c.Index, Bucket: t.Buckets[c.Index]})
				}
				b.StartTimer()
				must(b, m.ApplyDelta("scale", d))
				b.StopTimer()
				must(b, m.ApplyDelta("scale", undo))
				b.StartTimer()
			}
			b.ReportMetric(float64(len(changes)), "buckets-moved")
		})
	}
}
