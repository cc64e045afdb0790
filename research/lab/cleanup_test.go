package lab

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

// A run that fails half way (an event names a server that is not in the
// pool) removes everything it made.
func TestCleanupAfterFailure(t *testing.T) {
	requireLab(t)
	sc, err := ParseScenario("failing", strings.NewReader("servers 0 1\nmuxes 0\n2s remove-server 1\n3s remove-server 1\n10s end\n"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := DefaultParams("affinity", SizeCI, "beamer")
	p.Experiment = ""
	var inv *Inventory
	_, err = Run(context.Background(), RunOptions{Params: p, Scenario: sc, Beamer: beamerBin, Inventory: func(i *Inventory) { inv = i }})
	if err == nil || !strings.Contains(err.Error(), "not in the pool") {
		t.Fatalf("the run should fail at the second removal, got %v", err)
	}
	checkClean(t, inv)
}

// A run interrupted with Ctrl-C (SIGINT) while its load runs removes
// everything it made before exiting: namespaces, daemons, BPF programs.
func TestCleanupAfterInterrupt(t *testing.T) {
	requireLab(t)
	invPath := filepath.Join(t.TempDir(), "inventory.json")
	cmd := exec.Command(labBin, "lab", "run", "--experiment", "affinity", "--size", "ci", "--strategy", "beamer",
		"--out", "", "--inventory", invPath)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var out strings.Builder
	loadStarted := make(chan struct{})
	go func() {
		s := bufio.NewScanner(stdout)
		once := false
		for s.Scan() {
			out.WriteString(s.Text() + "\n")
			if strings.Contains(s.Text(), "  load: ") && !once {
				once = true
				close(loadStarted)
			}
		}
	}()
	select {
	case <-loadStarted:
	case <-time.After(90 * time.Second):
		t.Fatalf("the load did not start:\n%s", out.String())
	}
	time.Sleep(2 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the interrupted run did not exit within 60 s:\n%s", out.String())
	}
	if err == nil {
		t.Errorf("an interrupted run should exit with an error status")
	}
	t.Logf("interrupted run:\n%s", out.String())
	b, err := os.ReadFile(invPath)
	if err != nil {
		t.Fatalf("no inventory written: %v", err)
	}
	var invs []*Inventory
	if err := json.Unmarshal(b, &invs); err != nil || len(invs) != 1 {
		t.Fatalf("inventory %s: %v (%d runs)", b, err, len(invs))
	}
	checkClean(t, invs[0])
	// Nothing named after the interrupted process either.
	names, _ := os.ReadDir("/var/run/netns")
	prefix := netlab.OwnerPrefix(cmd.Process.Pid)
	for _, n := range names {
		if strings.HasPrefix(n.Name(), prefix) {
			t.Errorf("namespace %s left behind", n.Name())
		}
	}
}
