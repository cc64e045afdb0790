package beamercli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/store/storeurl"
)

// ctlAPI serves the management API over st (plaintext, on loopback) as
// the elected controller would, and returns its address for ctl --api.
// No controller runs: requests reach the store and wait there.
func ctlAPI(t *testing.T, st store.Store, root string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := &mgmtapi.StoreBackend{Store: st, Root: root, Identity: "test", ListJSON: listJSON, LookupJSON: lookupJSON, AlwaysLead: true}
		mgmtapi.Serve(ctx, ln, b, mgmtapi.Options{})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// emptyAPI is ctlAPI over a new, empty store.
func emptyAPI(t *testing.T) string {
	t.Helper()
	s, e, err := storetest.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); e.Close() })
	return ctlAPI(t, s, "/empty")
}

// TestCtlNoController: with no controller API reachable every ctl
// command says so and fails, and nothing creates a store (the working
// directory and the default embed:// directory stay as they were).
func TestCtlNoController(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close()
	dir := t.TempDir()
	t.Chdir(dir)
	// The default store's directory: ctl used to serve an empty embedded
	// etcd there when no controller did.
	defaultDir := strings.TrimPrefix(storeurl.Default, "embed://")
	before, _ := readDirNames(defaultDir)
	for _, args := range [][]string{
		{"ctl", "list"},
		{"ctl", "show", "web"},
		{"ctl", "lookup", "web", "198.18.1.5:40000"},
		{"ctl", "drain", "web", "1025"},
		{"ctl", "delete", "web"},
	} {
		err := run(append(args, "--api", addr, "--timeout", "1s")...)
		if err == nil || !strings.Contains(err.Error(), "no controller answered") || !strings.Contains(err.Error(), addr) {
			t.Errorf("beamer %s with no controller: %v", strings.Join(args, " "), err)
		}
	}
	if entries, _ := readDirNames(dir); len(entries) != 0 {
		t.Errorf("ctl created %v in the working directory", entries)
	}
	if after, _ := readDirNames(defaultDir); strings.Join(after, ",") != strings.Join(before, ",") {
		t.Errorf("ctl changed %s: %v, was %v", defaultDir, after, before)
	}
}

func readDirNames(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names, err
}

// TestCtlWatch: ctl watch prints the first round of the stream (the
// instances present, their servers' state, health and drain), as a table
// and as JSON lines, and stops after --count events. Changes as they
// happen: TestManagementAPI (pkg/controlplane/mgmtapi).
func TestCtlWatch(t *testing.T) {
	api := ctlStore(t)
	var buf bytes.Buffer
	rootCmd.SetOut(&buf)
	defer rootCmd.SetOut(nil)
	// Two instances (2 events), web's three servers' state and health (6)
	// and 1027's drain (1).
	if err := run("ctl", "watch", "--api", api, "--count", "9"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"instance   api: maglev", "instance   web: beamer", "health     web server 1025: - -> up", "drained    web server 1027: false -> true"} {
		if !strings.Contains(out, want) {
			t.Errorf("ctl watch lacks %q:\n%s", want, out)
		}
	}
	buf.Reset()
	if err := run("ctl", "watch", "web", "--api", api, "--count", "1", "-o", "json"); err != nil {
		t.Fatal(err)
	}
	var l watchLine
	if err := json.Unmarshal(buf.Bytes(), &l); err != nil || l.Kind != "instance" || l.Instance != "web" || l.Generation != 4 {
		t.Errorf("ctl watch -o json: %+v %v\n%s", l, err, buf.String())
	}
}
