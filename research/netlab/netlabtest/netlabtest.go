// Package netlabtest is the one namespace and live-TCP rig of the tests:
//
//   - RequireRoot, the rule for privileged tests: they skip with a clear
//     message on a machine without root, and fail instead when CI=true,
//     where they must run;
//   - New and NewRig: a lab whose namespaces (uniquely named, addresses in
//     198.18.0.0/15 and 2001:db8::/32 only) are removed when the test ends,
//     pass or fail; a Rig adds veth links (Link, Pair), a layer-2 fabric
//     (Attach) and the load balancer's DSR layout (client, muxes, servers);
//   - Listen, Dial, Serve and ServeEcho: sockets in a namespace, closed with
//     the test, and a server whose goroutines never outlive it;
//   - Load: live connections that keep exchanging data under deadlines,
//     bounded in time, reporting their progress, pauses and breaks;
//   - PinDir: a bpffs directory of the test's own.
package netlabtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab"
)

// RequireRoot skips (or, in CI, fails) a test that needs root for BPF and
// network namespaces.
func RequireRoot(t testing.TB) {
	t.Helper()
	RequireRootFor(t, "BPF and network namespaces")
}

// RequireRootFor is RequireRoot naming what the test needs root for.
func RequireRootFor(t testing.TB, what string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	skipOrFailInCI(t, fmt.Sprintf("this test needs root (%s) and CI must run it: run the tests as root", what),
		fmt.Sprintf("skipping: needs root for %s (run `sudo make test`)", what))
}

// RequireFile skips (or, in CI, fails) a test that needs a file the
// machine's setup installs (scripts/setup.sh): a program such as FRR's
// bgpd. what says what the test uses it for.
func RequireFile(t testing.TB, path, what string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	skipOrFailInCI(t, fmt.Sprintf("%s is missing (scripts/setup.sh installs it) and CI must run this test: %s", path, what),
		fmt.Sprintf("skipping: %s is missing (%s)", path, what))
}

// skipOrFailInCI is the rule for a test this machine cannot run: CI=true
// must run every test, so there it fails; elsewhere it skips, saying why.
func skipOrFailInCI(t testing.TB, inCI, elsewhere string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(inCI)
	}
	t.Skip(elsewhere)
}

// New returns a lab removed when the test ends, pass or fail.
func New(t testing.TB, tag string) *netlab.Lab {
	t.Helper()
	RequireRoot(t)
	lab, err := netlab.New(tag)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := lab.Close(); err != nil {
			t.Errorf("lab cleanup: %v", err)
		}
	})
	return lab
}

// pinRoot is where the daemons pin by default; tests pin below it too,
// in directories named test-TAG-PIDxN.
const pinRoot = "/sys/fs/bpf/beamer"

var pinSeq atomic.Int64

// PinDir is a fresh bpffs directory for a test's pins, removed when the
// test ends. Pins a killed test run left behind (its process gone) are
// removed first: a pinned link keeps its program loaded, and attached to
// whatever device it names, until someone unpins it.
func PinDir(t testing.TB, tag string) string {
	t.Helper()
	RequireRoot(t)
	SweepStalePins()
	dir := filepath.Join(pinRoot, fmt.Sprintf("test-%s-%dx%d", tag, os.Getpid(), pinSeq.Add(1)))
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// SweepStalePins removes the test pin directories whose process has
// exited: test-...-PID or test-...-PIDxN.
func SweepStalePins() {
	entries, _ := os.ReadDir(pinRoot)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "test-") {
			continue
		}
		last := e.Name()[strings.LastIndex(e.Name(), "-")+1:]
		pidStr, _, _ := strings.Cut(last, "x")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			continue
		}
		os.RemoveAll(filepath.Join(pinRoot, e.Name()))
	}
}
