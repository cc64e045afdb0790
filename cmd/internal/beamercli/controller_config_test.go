package beamercli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/store/storeurl"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func controllerCmd(t *testing.T) *cobra.Command {
	t.Helper()
	for _, c := range rootCmd.Commands() {
		if c.Name() == "controller" {
			return c
		}
	}
	t.Fatal("no controller command")
	return nil
}

// TestControllerConfigExample: examples/controller.yaml sets the flags it
// names, its store URL passes the security check, a flag given on the
// command line and a BEAMER_ variable win over the file, and an unknown
// key is refused with the reason.
func TestControllerConfigExample(t *testing.T) {
	cmd := controllerCmd(t)
	t.Cleanup(func() {
		cmd.Flags().VisitAll(func(f *pflag.Flag) { f.Value.Set(f.DefValue); f.Changed = false })
	})
	if err := cmd.Flags().Parse([]string{"--health-fall", "5"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BEAMER_METRICS", "127.0.0.1:9999")
	if err := applyFlagFile(cmd, "../../../examples/controller.yaml"); err != nil {
		t.Fatal(err)
	}
	get := func(n string) string { return cmd.Flags().Lookup(n).Value.String() }
	for n, want := range map[string]string{
		"health-interval": "2s", "identity": "controller-1", "flap-half-life": "5m0s",
		"health-fall": "5", // the command line wins
		"metrics":     "",  // the variable wins (applyEnv sets it; the file leaves it)
	} {
		if got := get(n); got != want {
			t.Errorf("--%s = %q, want %q", n, got, want)
		}
	}
	if err := storeurl.Check(get("store"), storeurl.Options{}); err != nil {
		t.Errorf("the example's store URL: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("health-intervall: 2s\n"), 0o644)
	if err := applyFlagFile(cmd, bad); err == nil || !strings.Contains(err.Error(), `"health-intervall" is not a setting of beamer controller`) {
		t.Errorf("unknown key: %v", err)
	}
	os.WriteFile(bad, []byte("health-rise: three\n"), 0o644)
	if err := applyFlagFile(cmd, bad); err == nil || !strings.Contains(err.Error(), "health-rise") {
		t.Errorf("bad value: %v", err)
	}
}
