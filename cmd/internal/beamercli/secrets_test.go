package beamercli

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

var secretKeys = cookie.Keys{Current: 1, Keys: [2]cookie.Key{{0x01234567, 0x89abcdef, 0xfedcba98, 0x76543210}, {0xdeadbeef, 0x0badf00d, 0x12345678, 0x9e3779b9}}}

// keyLeaks finds the forms a key could leak in: its hex, its first 8 hex
// digits (what `ctl show` used to print) and its last 8.
func keyLeaks(out string) []string {
	var found []string
	for _, k := range secretKeys.Keys {
		for _, form := range []string{k.String(), k.String()[:8], k.String()[24:]} {
			if strings.Contains(strings.ToLower(out), form) {
				found = append(found, form)
			}
		}
	}
	return found
}

// `ctl show` and `ctl list`, in every output format, print each key's id
// and fingerprint and never the key.
func TestCtlShowPrintsNoKeyBytes(t *testing.T) {
	s, e, err := storetest.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close(); e.Close() }()
	const root = "/secrets"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := controller.New(s, root, controller.Options{})
	in := &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyCheetah, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")},
		PortLow: 80, PortHigh: 80, Buckets: 100, Cheetah: &forwarding.CheetahOptions{Policy: forwarding.CheetahRR, Keys: secretKeys}}
	if err := c.CreateInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDIP(ctx, "web", 1025, netip.MustParseAddr("198.18.0.10"), 1); err != nil {
		t.Fatal(err)
	}
	st := ctlAPI(t, s, root)
	for _, cmd := range [][]string{{"ctl", "show", "web"}, {"ctl", "list"}} {
		for _, format := range []string{"table", "json", "yaml"} {
			out := ctlOut(t, append(cmd, "--api", st, "-o", format)...)
			if leaks := keyLeaks(out); len(leaks) > 0 {
				t.Errorf("%v -o %s prints key bytes %v:\n%s", cmd, format, leaks, out)
			}
			if format != "table" || cmd[1] == "show" {
				for _, k := range secretKeys.Keys {
					if !strings.Contains(out, k.Fingerprint()) {
						t.Errorf("%v -o %s lacks the fingerprint %s:\n%s", cmd, format, k.Fingerprint(), out)
					}
				}
			}
		}
	}
}

// Keys never reach a command line: ctl create and the agent read them from
// a file (mode 600) or the environment, and a running `ctl create`'s
// /proc/PID/cmdline holds the file's name, not the keys.
func TestCheetahKeysNotInArgv(t *testing.T) {
	s, e, err := storetest.Embedded(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close(); e.Close() }()
	file := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(file, []byte(secretKeys.Keys[0].String()+","+secretKeys.Keys[1].String()+",1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := ctlAPI(t, s, "/argv")
	// No controller runs: ctl create waits for one, long enough to be read.
	cmd := exec.Command(os.Args[0], "ctl", "create", "web", "--vip", "198.18.100.1", "--ports", "80", "--buckets", "100",
		"--strategy", "cheetah", "--cheetah-keys-file", file, "--api", st, "--timeout", "30s")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(300 * time.Millisecond)
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "cmdline"))
	if err != nil {
		t.Fatal(err)
	}
	argv := strings.ReplaceAll(string(b), "\x00", " ")
	if !strings.Contains(argv, file) {
		t.Fatalf("cmdline %q does not name the key file", argv)
	}
	if leaks := keyLeaks(argv); len(leaks) > 0 {
		t.Errorf("cmdline %q holds key bytes %v", argv, leaks)
	}
	// The agent has no flag that takes keys either.
	for _, c := range [][]string{{"agent", "--cheetah-keys", secretKeys.Keys[0].String()}, {"ctl", "create", "x", "--cheetah-keys", secretKeys.Keys[0].String()}} {
		if err := run(c...); err == nil || !strings.Contains(err.Error(), "unknown flag: --cheetah-keys") {
			t.Errorf("beamer %v: %v, want unknown flag", c[0], err)
		}
	}
}
