package lab

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestAWFDLab runs the AWFD experiment at CI size on real kernels: two
// servers shaped 2:1 (tbf), one mux, Pareto downloads near full load, AWFD
// (m=4, 250 ms polls) then Beamer with equal shares. Checked: the AWFD mux
// placed new connections by class records (real capacity polls reached
// it), the faster server got more downloads than the slower one under AWFD,
// and no download failed under either; a mux that loses half its class
// records (beamer-lab's mux, --awfd-drop) still places by class and
// completes downloads (its failures are logged: see below). The
// throughput and FCT figures are logged, not asserted (a shared CI machine
// makes them noisy); docs/strategy-awfd.md has the full runs.
func TestAWFDLab(t *testing.T) {
	requireLab(t)
	var log strings.Builder
	// Run directories in the system temporary directory, which FRR (user
	// frr) can enter; t.TempDir is private to root.
	e := AWFDExperiment{Beamer: beamerBin, Lab: labBin, Servers: 2, Muxes: 1, Clients: 1, Rates: []float64{40e6, 20e6},
		Load: 0.95, Reps: 1, Progress: &log,
		Flow: FlowOptions{Duration: 8 * time.Second, MeanSize: 256 << 10, Alpha: 2, MaxSize: 32 << 20, Seed: 1},
		Variants: []AWFDVariant{
			{Name: "awfd", Strategy: "awfd", Classes: 4, Poll: 250 * time.Millisecond},
			{Name: "beamer", Strategy: "beamer"},
			// The loss experiment's mux: beamer-lab's, the product's mux
			// with half the class records lost on their way to it.
			{Name: "awfd drop 50%", Strategy: "awfd", Classes: 4, Poll: 250 * time.Millisecond, Drop: 0.5},
		}}
	start := time.Now()
	res, err := RunAWFDExperiment(context.Background(), e)
	t.Logf("in %v:\n%s", time.Since(start).Round(time.Second), log.String())
	if err != nil {
		t.Fatal(err)
	}
	aw, eq, lossy := res.Runs[0], res.Runs[1], res.Runs[2]
	if aw.AWFD["by_class"] == 0 {
		t.Fatalf("AWFD mux placed no connection by class (decisions %v): no record reached it", aw.AWFD)
	}
	if lossy.AWFD["by_class"] == 0 {
		t.Errorf("AWFD mux losing half its records placed no connection by class (decisions %v): none reached it", lossy.AWFD)
	}
	for _, r := range []AWFDRun{aw, eq} {
		if r.Flows.Failed > 0 || r.Flows.Completed == 0 {
			t.Errorf("%s: %d of %d downloads failed: %v", r.Variant.Name, r.Flows.Failed, r.Flows.Started, r.Flows.Errors)
		}
	}
	// The lossy run is here for its mux (beamer-lab's, with the fault):
	// what losing records costs — slower downloads, now and then a reset
	// when stale classes overfill the slow server's queue — is the loss
	// experiment's to measure (docs/strategy-awfd.md, Fig. 14), not a
	// CI-sized run's to judge.
	if lossy.Flows.Completed == 0 {
		t.Errorf("%s: no download completed (%d started): %v", lossy.Variant.Name, lossy.Flows.Started, lossy.Flows.Errors)
	}
	t.Logf("%s: %.1f Mbit/s, mean FCT %.0f ms, %d of %d downloads failed", lossy.Variant.Name, lossy.Flows.Throughput, lossy.Flows.MeanFCT, lossy.Flows.Failed, lossy.Flows.Started)
	fast, slow := aw.Flows.PerServer["srv0"], aw.Flows.PerServer["srv1"]
	if fast <= slow {
		t.Errorf("AWFD sent %d downloads to the 40 Mbit/s server and %d to the 20 Mbit/s one: capacity did not steer it", fast, slow)
	}
	t.Logf("awfd: %.1f Mbit/s, mean FCT %.0f ms, per server %v; beamer: %.1f Mbit/s, mean FCT %.0f ms, per server %v",
		aw.Flows.Throughput, aw.Flows.MeanFCT, aw.Flows.PerServer, eq.Flows.Throughput, eq.Flows.MeanFCT, eq.Flows.PerServer)
}
