package beamercli

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestNodeStatus runs a real mux and a real agent (beamer processes in
// namespaces) and reads what their data planes hold with `beamer mux
// status` and `beamer agent status`: the mux's bucket counts are read back
// from the kernel's bucket array.
func TestNodeStatus(t *testing.T) {
	mux, srv := netlabtest.NewRig(t, "status").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "srv", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	dir := t.TempDir()
	muxCfg := filepath.Join(dir, "mux.yaml")
	os.WriteFile(muxCfg, []byte(`
interface: eth0
xdp_mode: generic
metrics: 127.0.0.1:9100
instances:
  - name: web
    vips: [198.18.100.1]
    port_low: 80
    port_high: 81
    buckets: 100
    servers:
      - {id: 1025, address: 198.18.0.10}
      - {id: 1026, address: 198.18.0.11, weight: 3}
`), 0o644)
	agentCfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(agentCfg, []byte(`
interface: eth0
server_id: 1025
trusted: [198.18.0.0/24]
vips:
  - {vip: 198.18.100.1, buckets: 100, chain_window: 2m}
mptcp: false
api: "off"
metrics: 127.0.0.1:9101
`), 0o644)
	m := beamer(t, mux, "mux", "--config", muxCfg, "--pin-dir", "-", "--state-file", filepath.Join(dir, "mux-state.json"))
	// (--pin-dir - fails in the agent: "pinning map generation_seen: -/state-…
	// is not on a bpf filesystem"; a real pin directory is used instead.)
	pins := netlabtest.PinDir(t, "status")
	a := beamer(t, srv, "agent", "--config", agentCfg, "--pin-dir", pins, "--state-file", filepath.Join(dir, "agent-state.json"))
	status := func(what string, p *proc, args ...string) string {
		t.Helper()
		var out string
		var err error
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			ns := mux
			if what == "agent" {
				ns = srv
			}
			if out, err = beamerRun(t, ns, append([]string{what, "status"}, args...)...); err == nil {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s status: %v\n%s\ndaemon:\n%s", what, err, out, p.output())
			}
		}
	}
	got := status("mux", m, "--metrics", "127.0.0.1:9100")
	want := `mux on eth0 (198.18.0.1)
INSTANCE  VIP           PORTS  STRATEGY  INCARNATION  GEN  SERVER   ADDRESS      STATE   BUCKETS
web       198.18.100.1  80-81  beamer    0            1                                  100
                                                           -> 1025  198.18.0.10  active  25
                                                           -> 1026  198.18.0.11  active  75
packets: `
	if !strings.HasPrefix(got, want) {
		t.Errorf("mux status:\n%s\nwant:\n%s", got, want)
	}
	var js struct {
		Role      string `json:"role"`
		Instances []struct {
			Generation uint32 `json:"generation"`
			Servers    []struct {
				ID      int `json:"id"`
				Buckets int `json:"buckets"`
			} `json:"servers"`
		} `json:"instances"`
		Counters map[string]uint64 `json:"counters"`
	}
	if err := json.Unmarshal([]byte(status("mux", m, "--metrics", "127.0.0.1:9100", "-o", "json")), &js); err != nil {
		t.Fatal(err)
	}
	if _, ok := js.Counters["fwd_bucket"]; js.Role != "mux" || len(js.Instances) != 1 || js.Instances[0].Servers[1].Buckets != 75 || !ok {
		t.Errorf("mux status -o json: %+v", js)
	}
	got = status("agent", a, "--metrics", "127.0.0.1:9101")
	want = `agent on eth0, server id 1025
VIP           BUCKETS  WINDOW  NEWEST INCARNATION  NEWEST GEN  PACKETS  BYTES  CHAINED IN
198.18.100.1  100      120s    0                   0           0        0      0
packets: `
	if !strings.HasPrefix(got, want) {
		t.Errorf("agent status:\n%s\nwant:\n%s", got, want)
	}
	if out, err := beamerRun(t, mux, "mux", "status"); err == nil || !strings.Contains(out, "give --metrics ADDR") {
		t.Errorf("mux status without --metrics: %v %s", err, out)
	}
}
