package beamercli

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/declarative"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// runningController starts an embedded etcd with a controller elected on
// it, serving the management API, and returns ctl's --api.
func runningController(t *testing.T, name string) string {
	t.Helper()
	s, e, err := storetest.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const root = "/decl"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		controller.Run(ctx, s, root, controller.RunOptions{Identity: name, ReconcileEvery: time.Hour})
		close(done)
	}()
	t.Cleanup(func() { cancel(); <-done; s.Close(); e.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() {
		b := &mgmtapi.StoreBackend{Store: s, Root: root, Identity: name, ListJSON: listJSON, LookupJSON: lookupJSON}
		mgmtapi.Serve(ctx, ln, b, mgmtapi.Options{})
		close(served)
	}()
	t.Cleanup(func() { cancel(); <-served })
	return ln.Addr().String()
}

// TestCtlExportApplyRoundTrip: state built with ctl commands on one
// controller (beamer, maglev, prism, cheetah and awfd instances; several
// servers, weights, a drain, a removal), exported, applied with ctl apply
// to a fresh empty controller, exported again: the same document. Diff of
// the file against either prints nothing; a second apply changes nothing.
func TestCtlExportApplyRoundTrip(t *testing.T) {
	src := runningController(t, "source")
	ctl := func(args ...string) string {
		t.Helper()
		return ctlOut(t, append(append([]string{"ctl"}, args...), "--api", src)...)
	}
	ctl("create", "web", "--vip", "198.18.10.1", "--ports", "80", "--buckets", "200", "--health", "tcp", "--max-chain", "3")
	ctl("add-dip", "web", "1025", "198.18.11.1", "1026", "198.18.11.2", "1027", "198.18.11.3")
	ctl("set-weight", "web", "1026", "4")
	ctl("drain", "web", "1027")
	ctl("add-dip", "web", "1028", "198.18.11.4")
	ctl("remove-dip", "web", "1028") // removing: not exported
	ctl("create", "mag", "--strategy", "maglev", "--vip", "198.18.10.2,198.18.10.3", "--ports", "443-444", "--tcp-ports", "8443", "--server-ids", "20000-20999", "--udp-ports", "53", "--encap", "gue")
	ctl("add-dip", "mag", "20000", "198.18.12.1", "3")
	ctl("create", "pr", "--strategy", "prism", "--vip", "198.18.10.6", "--ports", "80", "--buckets", "100", "--mct-entries", "4096")
	ctl("add-dip", "pr", "1100", "198.18.15.1", "1101", "198.18.15.2")
	ctl("create", "v6", "--vip", "2001:db8:10::1", "--ports", "80", "--buckets", "100", "--health", "none", "--encap", "gue")
	ctl("add-dip", "v6", "1100", "2001:db8:11::1", "1101", "2001:db8:11::2")
	ctl("create", "ch", "--strategy", "cheetah", "--policy", "wrr", "--vip", "198.18.10.4", "--ports", "80", "--buckets", "100")
	ctl("add-dip", "ch", "1025", "198.18.13.1")
	ctl("create", "aw", "--strategy", "awfd", "--vip", "198.18.10.5", "--ports", "80", "--classes", "3")
	ctl("add-dip", "aw", "1025", "198.18.14.1", "1026", "198.18.14.2", "--weight", "2")

	dir := t.TempDir()
	file := filepath.Join(dir, "state.yaml")
	ctl("export", "-o", file)
	exported, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"apiVersion: beamer/v1", "name: aw", "name: ch", "policy: wrr", "name: mag", "name: pr", "mct_entries: 4096", "2001:db8:11::2",
		"encap: gue", "drained: true", "weight: 4", "max_chain: 3"} {
		if !strings.Contains(string(exported), want) {
			t.Errorf("export lacks %q:\n%s", want, exported)
		}
	}
	if strings.Contains(string(exported), "1028") || strings.Contains(string(exported), "keys") {
		t.Errorf("export names a removing server or cheetah keys:\n%s", exported)
	}
	if got := ctl("export"); got != string(exported) {
		t.Errorf("export to stdout differs from -o:\n%s", got)
	}

	dst := runningController(t, "fresh")
	out := ctlOut(t, "ctl", "apply", "-f", file, "--api", dst)
	if !strings.Contains(out, "+ instance web") || !strings.Contains(out, "applied "+file+": ") {
		t.Errorf("apply printed:\n%s", out)
	}
	again := ctlOut(t, "ctl", "export", "--api", dst)
	if again != string(exported) {
		t.Fatalf("export after apply on a fresh controller differs:\n--- source\n%s\n--- fresh\n%s", exported, again)
	}
	if out := ctlOut(t, "ctl", "apply", "-f", file, "--api", dst); out != "no changes: the live state equals "+file+"\n" {
		t.Errorf("second apply printed %q", out)
	}
	for _, st := range []string{src, dst} {
		d, err := readDocument(file)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		var f ctlFlags
		timeout := 30 * time.Second
		f.api, f.timeout = &apiClientFlags{addrs: &[]string{st}, insecure: new(bool)}, &timeout
		var changed bool
		if err := f.withOperator(func(ctx context.Context, op declarative.Operator) error {
			changed, err = runDiff(ctx, op, d, &buf)
			return err
		}); err != nil || changed || buf.Len() != 0 {
			t.Errorf("diff of an equal file: changed %v, err %v, printed %q", changed, err, buf.String())
		}
	}
	// A changed file: diff says what apply would do.
	changedFile := filepath.Join(dir, "changed.yaml")
	os.WriteFile(changedFile, []byte(strings.Replace(string(exported), "weight: 4", "weight: 5", 1)), 0o644)
	d, err := readDocument(changedFile)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var f ctlFlags
	timeout := 30 * time.Second
	f.api, f.timeout = &apiClientFlags{addrs: &[]string{dst}, insecure: new(bool)}, &timeout
	var changed bool
	f.withOperator(func(ctx context.Context, op declarative.Operator) error {
		changed, err = runDiff(ctx, op, d, &buf)
		return err
	})
	if err != nil || !changed || buf.String() != "~ instance web: server 1026 weight 4 -> 5\n" {
		t.Errorf("diff of a changed file: changed %v, err %v, printed %q", changed, err, buf.String())
	}

	// `ctl diff` exits as diff(1) does: 0 equal (nothing printed), 1
	// differing, 2 trouble.
	badFile := filepath.Join(dir, "bad.yaml")
	os.WriteFile(badFile, []byte("apiVersion: beamer/v1\ninstances: []\nextra: 1\n"), 0o644)
	for _, c := range []struct {
		file   string
		code   int
		stdout string
	}{
		{file, diffSame, ""},
		{changedFile, diffChanged, "~ instance web: server 1026 weight 4 -> 5\n"},
		{badFile, diffTrouble, ""},
	} {
		cmd := exec.Command(os.Args[0], "ctl", "diff", "-f", c.file, "--api", dst)
		cmd.Env = append(os.Environ(), childEnv+"=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != c.code || stdout.String() != c.stdout {
			t.Errorf("ctl diff -f %s: exit %d, printed %q (stderr %q), want exit %d and %q", filepath.Base(c.file), code, stdout.String(), stderr.String(), c.code, c.stdout)
		}
	}
}
