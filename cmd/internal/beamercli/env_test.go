package beamercli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEnvFlags: BEAMER_API gives ctl its controller API; the command line wins
// over the variable; list flags split on commas; a bad value names the
// variable; the help says which variable a flag reads.
func TestEnvFlags(t *testing.T) {
	st := ctlStore(t)
	t.Setenv("BEAMER_API", st)
	if got := ctlOut(t, "ctl", "list"); !strings.Contains(got, "\nweb ") {
		t.Errorf("ctl list with BEAMER_API:\n%s", got)
	}
	// The command line wins: an API that does not exist is refused.
	if err := run("ctl", "list", "--api", "bogus.invalid:1", "--insecure"); err == nil || !strings.Contains(err.Error(), "bogus.invalid:1") {
		t.Errorf("--api over BEAMER_API: %v", err)
	}
	t.Setenv("BEAMER_INSTANCE", "web,api")
	t.Setenv("BEAMER_IFACE", "eth7")
	mux := findCmd(t, "mux")
	if err := applyEnv(mux); err != nil {
		t.Fatal(err)
	}
	if got, _ := mux.Flags().GetStringSlice("instance"); strings.Join(got, " ") != "web api" {
		t.Errorf("BEAMER_INSTANCE: %v", got)
	}
	if got, _ := mux.Flags().GetString("iface"); got != "eth7" {
		t.Errorf("BEAMER_IFACE: %v", got)
	}
	t.Setenv("BEAMER_INSECURE", "maybe")
	if err := run("ctl", "list"); err == nil || !strings.HasPrefix(err.Error(), `BEAMER_INSECURE="maybe": `) {
		t.Errorf("bad BEAMER_INSECURE: %v", err)
	}
	documentEnv(rootCmd)
	documentEnv(rootCmd) // idempotent
	if u := mux.Flags().Lookup("store").Usage; !strings.HasSuffix(u, "(env BEAMER_STORE)") || strings.Count(u, "BEAMER_STORE") != 1 {
		t.Errorf("--store help: %q", u)
	}
}

func findCmd(t *testing.T, name string) *cobra.Command {
	t.Helper()
	for _, c := range rootCmd.Commands() {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no command %s", name)
	return nil
}
