package beamercli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCtlDurationsInSeconds: show and list give the chaining window in the
// same unit, in the table and in JSON (ctl show once printed nanoseconds,
// ctl list seconds).
func TestCtlDurationsInSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{4 * time.Minute: "240s", 1500 * time.Millisecond: "1.5s", 0: "0s", time.Millisecond: "0.001s"} {
		if got := formatSeconds(d); got != want {
			t.Errorf("formatSeconds(%v) = %q, want %q", d, got, want)
		}
	}
	st := ctlStore(t)
	if got := ctlOut(t, "ctl", "show", "web", "--api", st); !strings.Contains(got, "chaining window 240s,") {
		t.Errorf("ctl show: no \"chaining window 240s\":\n%s", got)
	}
	var show struct {
		ChainWindowSeconds float64 `json:"chain_window_seconds"`
		Instance           struct {
			Name string `json:"name"`
		} `json:"instance"`
	}
	if err := json.Unmarshal([]byte(ctlOut(t, "ctl", "show", "web", "--api", st, "-o", "json")), &show); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Instances []struct {
			Name               string  `json:"name"`
			ChainWindowSeconds float64 `json:"chain_window_seconds"`
		} `json:"instances"`
	}
	if err := json.Unmarshal([]byte(ctlOut(t, "ctl", "list", "--api", st, "-o", "json")), &list); err != nil {
		t.Fatal(err)
	}
	if show.Instance.Name != "web" || show.ChainWindowSeconds != 240 {
		t.Errorf("ctl show -o json: %+v, want chain_window_seconds 240", show)
	}
	for _, in := range list.Instances {
		if in.Name == "web" && in.ChainWindowSeconds != show.ChainWindowSeconds {
			t.Errorf("ctl list says %v s, ctl show %v s", in.ChainWindowSeconds, show.ChainWindowSeconds)
		}
	}
}
