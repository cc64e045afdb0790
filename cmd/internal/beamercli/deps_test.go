package beamercli

import (
	"os/exec"
	"strings"
	"testing"
)

// researchOnly are the import paths the product binary must not contain:
// the research wing (lab, simulators, benchmarks), plotting and its fonts,
// and quic-go (the lab's QUIC clients). They belong to beamer-lab; a
// daemon that linked them would ship megabytes of code no operator runs.
var researchOnly = []string{
	"github.com/beamer-lb/beamer/research/",
	"gonum.org/",
	"codeberg.org/go-fonts/",
	"github.com/quic-go/",
}

// TestProductHasNoResearchDeps: nothing beamer links, directly or through
// another package, is research code, plotting, fonts or quic-go.
func TestProductHasNoResearchDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/beamer-lb/beamer/cmd/beamer").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), out)
	}
	for _, p := range deps {
		for _, bad := range researchOnly {
			if strings.HasPrefix(p, bad) {
				t.Errorf("cmd/beamer depends on %s (no %s* in the product binary; it belongs to cmd/beamer-lab)", p, bad)
			}
		}
	}
}

// TestProductHasNoLabCommands: beamer's commands, and so its man pages and
// shell completion, name none of beamer-lab's.
func TestProductHasNoLabCommands(t *testing.T) {
	for _, c := range rootCmd.Commands() {
		switch c.Name() {
		case "demo", "lab", "sim", "bench":
			t.Errorf("beamer has the lab command %q (it belongs to beamer-lab)", c.Name())
		}
	}
	var out strings.Builder
	rootCmd.SetOut(&out)
	defer rootCmd.SetOut(nil)
	if err := run("__complete", ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mux\t", "agent\t", "controller\t", "ctl\t", "decode\t", "version\t"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("completion lacks %q:\n%s", want, out.String())
		}
	}
	for _, lab := range []string{"demo\t", "lab\t", "sim\t", "bench\t"} {
		if strings.Contains(out.String(), lab) {
			t.Errorf("completion offers the lab command %q:\n%s", lab, out.String())
		}
	}
}
