package prism

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPrismKeepAliveOptions: a mux list with a bad line or limits that
// contradict each other are refused with the reason; comments and blank
// lines are fine.
func TestPrismKeepAliveOptions(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte("# muxes\n198.18.0.1:9100\n\n  [2001:db8::1]:9100  # v6\n"), 0o644)
	o := &KeepAlive{MuxesFile: good, Muxes: []string{"198.18.0.3:9100"}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, err := o.muxes(); err != nil || len(got) != 3 || got[2] != "[2001:db8::1]:9100" {
		t.Fatalf("muxes %v, %v", got, err)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("198.18.0.1:9100\n198.18.0.2\n"), 0o644)
	for _, c := range []struct {
		o    KeepAlive
		want string
	}{
		{KeepAlive{MuxesFile: bad}, "line 2"},
		{KeepAlive{MuxesFile: filepath.Join(dir, "none")}, "no such file"},
		{KeepAlive{Muxes: []string{"x:1"}, IdleRounds: 5, IdleMax: 2}, "idle max 2 below idle rounds 5"},
		{KeepAlive{Muxes: []string{"x:1"}, Every: -time.Second}, "negative"},
	} {
		if err := c.o.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}
