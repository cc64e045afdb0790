// Package netlabtest gives tests a netlab.Lab that is always cleaned up, and
// the rule for privileged tests: they skip with a clear message on a machine
// without root, and fail instead when CI=true, where they must run.
package netlabtest

import (
	"os"
	"testing"

	"github.com/beamer-lb/beamer/pkg/netlab"
)

// RequireRoot skips (or, in CI, fails) a test that needs root for BPF and
// network namespaces.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this test needs root (BPF, network namespaces) and CI must run it: run the tests as root")
	}
	t.Skip("skipping: needs root for BPF and network namespaces (run `sudo make test`)")
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
