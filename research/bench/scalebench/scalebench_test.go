package scalebench

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(ControllerEnv); url != "" {
		os.Exit(ControllerMain(url))
	}
	os.Exit(m.Run())
}

// needStore skips without the server's package, except in CI.
func needStore(t *testing.T, kind string) {
	t.Helper()
	missing := ""
	switch kind {
	case "etcd":
		if _, err := exec.LookPath("etcd"); err != nil {
			missing = "etcd (Debian package etcd-server)"
		}
	case "zookeeper":
		if _, err := os.Stat(zkServerScript); err != nil {
			missing = "ZooKeeper (Debian package zookeeper)"
		}
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed (CI=true: scripts/setup.sh must install it)", missing)
	}
	t.Skipf("%s is not installed; skipping", missing)
}

// TestBenchmarkPath runs the benchmark's whole path at CI size on both
// real stores: a controller process, requests as ctl sends them, a batch
// add and remove, single add-dip and remove-dip, followers' cold starts.
// It checks outcomes only — every follower ends with the store's table
// (Run verifies it), every operation produced a generation every follower
// read — never a time.
func TestBenchmarkPath(t *testing.T) {
	for _, kind := range []string{"etcd", "zookeeper"} {
		t.Run(kind, func(t *testing.T) {
			needStore(t, kind)
			xdp := 1 // a real XDP mux beside the followers
			if os.Geteuid() != 0 {
				if os.Getenv("CI") == "true" {
					t.Fatal("CI=true: the XDP mux needs root")
				}
				t.Log("not root: no XDP mux in this run (BPF and network namespaces need root)")
				xdp = 0
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var log strings.Builder
			res, err := Run(ctx, Options{Store: kind, Followers: 4, DIPs: 60, Buckets: 6000, Batch: 30, Ops: 4,
				ColdStarts: 1, XDPMuxes: xdp, Controller: SelfController, Timeout: 3 * time.Minute, IdleWindow: time.Second, Progress: &log})
			if err != nil {
				t.Fatalf("%v\nprogress:\n%s", err, log.String())
			}
			ops := append([]Op{res.Seed, res.BatchAdd, res.BatchRemove}, res.Single...)
			for _, op := range ops {
				if op.Generations < 1 {
					t.Errorf("%s of %d DIPs published no generation: %+v", op.Kind, op.DIPs, op)
				}
			}
			for _, op := range ops[1:] { // the seed ran before any follower
				if op.BytesPerMux <= 0 || op.All < op.First {
					t.Errorf("%s of %d DIPs: followers read %d bytes, first %v, all %v", op.Kind, op.DIPs, op.BytesPerMux, op.First, op.All)
				}
			}
			if len(res.ColdStart) != 4 || len(res.FreshStart) != 1 || res.FreshBytes <= 0 {
				t.Errorf("cold starts: %v, fresh %v (%d bytes)", res.ColdStart, res.FreshStart, res.FreshBytes)
			}
			if res.ControllerPeak <= 0 {
				t.Errorf("controller memory not read")
			}
			if res.XDPMuxes != xdp || len(res.XDPCold) != xdp {
				t.Errorf("%d XDP muxes ran, want %d", res.XDPMuxes, xdp)
			}
			if res.FollowerErrors != 0 {
				t.Errorf("%d follower errors", res.FollowerErrors)
			}
			var md strings.Builder
			PrintMarkdown(&md, []*Result{res})
			if !strings.Contains(md.String(), "yes (4 muxes") {
				t.Errorf("table:\n%s", md.String())
			}
			t.Logf("\n%s", md.String())
		})
	}
}
