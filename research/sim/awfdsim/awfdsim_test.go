package awfdsim

import (
	"testing"
	"time"
)

// A small run (20k flows, 2 VIPs × 20 DIPs, 2 s lives, 5 s warm-up, 2 seeds) keeps the paper's
// ordering where it is robust: WCMP beats ECMP under 1:2 capacities, AWFD
// m=4 at 500 ms beats WCMP and ECMP, the heuristic optimum is at least as good within 0.01 (it is a heuristic),
// and LCF with slow updates is the worst. Ω stays in (0, 1].
func TestOrdering(t *testing.T) {
	c := Default()
	c.Flows, c.VIPs, c.DIPsPerVIP, c.Warmup, c.MeanLife = 20000, 2, 20, 5*time.Second, 2*time.Second
	c.Intervals = []time.Duration{100 * time.Millisecond, 2 * time.Second} // 1/20 and 1/1 of a flow's life
	c.Classes = []int{4}
	c.FigM = []int{1, 4}
	c.Seeds = []uint64{1, 2}
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string, i int) float64 {
		for _, s := range r.Fig8 {
			if s.Name == name {
				return s.Points[i].Omega
			}
		}
		t.Fatalf("no series %q", name)
		return 0
	}
	ecmp, wcmp, opt := get("ECMP", 0), get("WCMP", 0), get("heuristic optimum", 0)
	awfd, lcf := get("AWFD m=4", 0), get("LCF", 1)
	t.Logf("ECMP %.4f WCMP %.4f AWFD4@100ms %.4f LCF@2s %.4f opt %.4f", ecmp, wcmp, awfd, lcf, opt)
	for _, x := range []float64{ecmp, wcmp, opt, awfd, lcf} {
		if x <= 0 || x > 1 {
			t.Fatalf("Ω %v outside (0, 1]", x)
		}
	}
	if !(wcmp > ecmp && awfd > wcmp && opt >= awfd-0.01 && lcf < ecmp) {
		t.Fatalf("ordering broken: ECMP %.4f WCMP %.4f AWFD %.4f opt %.4f LCF %.4f", ecmp, wcmp, awfd, opt, lcf)
	}
}
