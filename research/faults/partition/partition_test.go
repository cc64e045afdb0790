package partition

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/faults/history"
	"github.com/beamer-lb/beamer/research/lab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

var beamerBin string

func TestMain(m *testing.M) {
	code := func() int {
		if os.Geteuid() != 0 {
			return m.Run() // the rig's tests skip (or fail in CI) on their own
		}
		dir, err := os.MkdirTemp("", "beamer-partition-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		beamerBin = filepath.Join(dir, "beamer")
		if out, err := exec.Command("go", "build", "-o", beamerBin, "github.com/beamer-lb/beamer/cmd/beamer").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building beamer for the partition rig: %v\n%s", err, out)
			return 1
		}
		return m.Run()
	}()
	os.Exit(code)
}

func requireRig(t *testing.T) {
	t.Helper()
	netlabtest.RequireRoot(t)
	netlabtest.RequireFile(t, "/usr/lib/frr/bgpd", "the lab's border router needs FRR (apt-get install frr)")
	if why := lab.RequireLoopDevices(); why != "" {
		// The disk-failed fault needs each member's filesystem of its own.
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s, and CI must run the disk-failed fault", why)
		}
		t.Skipf("skipping: %s (the disk-failed fault)", why)
	}
}

// seeds are the fixed seed and one drawn now (printed, for replay with
// BEAMER_PARTITION_SEED).
func seeds(t *testing.T) []uint64 {
	if s := os.Getenv("BEAMER_PARTITION_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BEAMER_PARTITION_SEED=%q: %v", s, err)
		}
		return []uint64{n}
	}
	return []uint64{1, rand.Uint64() % 1_000_000}
}

// runRig runs the CI-sized rig on store with each seed and fails on any
// violation the checker finds.
func runRig(t *testing.T, store string) {
	requireRig(t)
	for _, seed := range seeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("seed %d (replay: BEAMER_PARTITION_SEED=%d go test -run '%s' ./research/faults/partition/)", seed, seed, t.Name()[:strings.Index(t.Name(), "/")])
			// Not t.TempDir: FRR's daemons (user frr) must reach the
			// router's directory, and a test's temporary tree is 0700.
			dir, err := os.MkdirTemp("", "beamer-partition-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if t.Failed() || os.Getenv("BEAMER_PARTITION_KEEP") != "" {
					t.Logf("run directory kept: %s", dir)
					return
				}
				os.RemoveAll(dir)
			})
			c := CI(beamerBin, dir, store, seed)
			c.Logf = t.Logf
			c.Budget = 5 * time.Minute
			soak(t, &c)
			only(t, &c)
			start := time.Now()
			res, err := Run(context.Background(), c)
			if res != nil {
				report(t, res)
			}
			if err != nil {
				t.Fatalf("rig: %v (after %v)", err, time.Since(start).Round(time.Second))
			}
			t.Logf("run took %v", time.Since(start).Round(time.Second))
			if len(res.Faults) != c.Faults && os.Getenv("BEAMER_PARTITION_SOAK") == "" {
				t.Errorf("%d faults injected, want %d (every kind at least once)", len(res.Faults), c.Faults)
			}
			if len(res.History.Requests) == 0 || len(res.History.Applies) == 0 {
				t.Fatal("the history is empty: the check would prove nothing")
			}
			if len(res.Left) > 0 {
				t.Errorf("left behind by the rig:\n  %s", strings.Join(res.Left, "\n  "))
			}
			if len(res.Violations) > 0 {
				t.Errorf("the checker found violations:\n%s", history.Report(res.Violations))
			}
		})
	}
}

// soak makes the run scripts/partition-soak.sh asks for:
// BEAMER_PARTITION_SOAK=N faults (N ≥ 5), each followed by 10–20 s of
// settling, so that every failover completes before the next fault, in at
// most BEAMER_PARTITION_SOAK_BUDGET (default 30m).
func soak(t *testing.T, c *Config) {
	v := os.Getenv("BEAMER_PARTITION_SOAK")
	if v == "" {
		return
	}
	n, err := strconv.Atoi(v)
	least := len(Kinds)
	if os.Getenv("BEAMER_PARTITION_KINDS") != "" {
		least = 1
	}
	if err != nil || n < least || n > 500 {
		t.Fatalf("BEAMER_PARTITION_SOAK=%q: want a number of faults in %d–500", v, least)
	}
	c.Faults = n
	c.Hold = [2]time.Duration{3 * time.Second, 10 * time.Second}
	c.LeaseHold = [2]time.Duration{3 * time.Second, 20 * time.Second} // shorter and longer than the lease
	c.Settle = [2]time.Duration{10 * time.Second, 20 * time.Second}
	c.DiskHold = c.Hold
	c.Budget = 30 * time.Minute
	if b := os.Getenv("BEAMER_PARTITION_SOAK_BUDGET"); b != "" {
		if c.Budget, err = time.ParseDuration(b); err != nil {
			t.Fatalf("BEAMER_PARTITION_SOAK_BUDGET: %v", err)
		}
	}
}

// only restricts a run to the kinds BEAMER_PARTITION_KINDS lists
// (comma-separated), each injected once per listing unless a soak asks
// for more: a replay or a measurement of one kind.
func only(t *testing.T, c *Config) {
	v := os.Getenv("BEAMER_PARTITION_KINDS")
	if v == "" {
		return
	}
	c.Kinds = nil
	for _, name := range strings.Split(v, ",") {
		k := Kind(strings.TrimSpace(name))
		if !slices.Contains(Kinds, k) {
			t.Fatalf("BEAMER_PARTITION_KINDS: unknown kind %q (kinds: %v)", k, Kinds)
		}
		c.Kinds = append(c.Kinds, k)
	}
	if os.Getenv("BEAMER_PARTITION_SOAK") == "" {
		c.Faults = len(c.Kinds)
	}
}

func report(t *testing.T, res *Result) {
	t.Helper()
	t.Log(history.Summary(res.History))
	for _, r := range res.History.Requests {
		if r.Outcome != history.OK {
			t.Logf("request %d %s: %s (%s)", r.ID, r.Op, r.Outcome, r.Err)
		}
	}
	t.Log("\n" + Summarize(res.Figures))
	if os.Getenv("BEAMER_PARTITION_KEEP") != "" { // a measurement: every request's and fault's times
		for _, f := range res.Faults {
			t.Logf("fault %s: injected %s healed %s", f, f.Injected.UTC().Format("15:04:05.000"), f.Healed.UTC().Format("15:04:05.000"))
		}
		for _, r := range res.History.Requests {
			t.Logf("request %d %s: %s %s → %s (%v)", r.ID, r.Op, r.Outcome, r.Start.UTC().Format("15:04:05.000"), r.End.UTC().Format("15:04:05.000"), r.End.Sub(r.Start).Round(time.Millisecond))
		}
	}
}

// TestPartitionEtcd: three controller hosts on the embedded, replicated
// etcd, two muxes, three servers, live connections; each fault kind once
// at seeded random times while ctl requests run one at a time; the
// history checker is the assertion.
func TestPartitionEtcd(t *testing.T) { runRig(t, "embedded") }

// TestPartitionZooKeeper: the same on a 3-server ZooKeeper ensemble, one
// server on each controller host.
func TestPartitionZooKeeper(t *testing.T) {
	netlabtest.RequireFile(t, "/usr/share/zookeeper/bin/zkServer.sh", "the ensemble needs ZooKeeper (apt-get install zookeeper)")
	runRig(t, "zookeeper")
}
