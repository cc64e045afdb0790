package dpbench

import (
	"os"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// BenchmarkDataplane runs the full benchmark and prints its table (the same
// as `beamer-lab bench dataplane`).
func BenchmarkDataplane(b *testing.B) {
	netlabtest.RequireRoot(b)
	for i := 0; i < b.N; i++ {
		rep, err := Run(Full, os.Stderr)
		if err != nil {
			b.Fatal(err)
		}
		rep.Print(os.Stdout)
		b.ReportMetric(rep.Ratios.BeamerOverEncapFloor, "beamer/encap-floor")
	}
}
