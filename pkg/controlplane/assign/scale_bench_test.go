package assign

import (
	"fmt"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Benchmarks at the paper's largest instance (Beamer §6.4): 64K DIPs with
// 100 buckets each. They report the delta size as changes/op and the bytes
// a delta would take at 12 bytes per change (index + packed bucket).

const scaleDIPs, scalePerDIP = 64000, 100

func scaleServers(n int) []Server {
	s := make([]Server, n)
	for i := range s {
		s[i] = Server{forwarding.MinServerID + forwarding.ServerID(i), 1}
	}
	return s
}

// balanced returns a table where servers own contiguous equal ranges, the
// state a long-running, defragmented instance is in.
func balanced(buckets int, servers []Server) []forwarding.Bucket {
	t := make([]forwarding.Bucket, buckets)
	apply(t, Rebalance(t, servers, 1))
	return t
}

func BenchmarkRebalanceScale(b *testing.B) {
	all := scaleServers(scaleDIPs)
	for _, k := range []int{1, 1000, 32000} {
		b.Run(fmt.Sprintf("add%d", k), func(b *testing.B) {
			start := balanced(scaleDIPs*scalePerDIP, all[:scaleDIPs-k])
			benchRebalance(b, start, all)
		})
		b.Run(fmt.Sprintf("remove%d", k), func(b *testing.B) {
			start := balanced(scaleDIPs*scalePerDIP, all)
			benchRebalance(b, start, all[k:])
		})
	}
}

func benchRebalance(b *testing.B, start []forwarding.Bucket, servers []Server) {
	b.ReportAllocs()
	var n int
	for b.Loop() {
		n = len(Rebalance(start, servers, 2))
	}
	b.ReportMetric(float64(n), "changes/op")
	b.ReportMetric(float64(n*12), "delta-bytes/op")
}
