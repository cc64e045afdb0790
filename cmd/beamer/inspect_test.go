package main

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/beamer-lb/beamer/pkg/config"
	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
)

// Issue 25, item 3: `beamer mux inspect` and `beamer agent inspect` show
// what a node forwards with its daemon stopped. A real mux and a real agent
// (this binary as beamer) forward live connections, both stop the way an
// upgrade stops them (SIGUSR2: programs left pinned and forwarding), and
// inspect then reads the same table the mux was configured with, the
// generation the agent saw from it, and the traffic that went through.
func TestInspectWithDaemonsDown(t *testing.T) {
	r := newRestartRig(t, forwarding.StrategyBeamer, "insp")
	r.agentHere(t, r.srv2, arServer2, 1031)
	r.writeAgentConfig(t, false)
	agent, _ := r.startAgent(t)

	muxCfg, muxPins := filepath.Join(t.TempDir(), "mux.yaml"), netlabtest.PinDir(t, "inspmux")
	if err := os.WriteFile(muxCfg, []byte(fmt.Sprintf(`interface: eth0
instances:
  - name: web
    strategy: beamer
    vips: [%s]
    port_low: 80
    port_high: 80
    buckets: %d
    servers:
      - {id: 1030, address: %s}
      - {id: 1031, address: %s, weight: 3}
`, arVIP, arBuckets, arServer, arServer2)), 0o600); err != nil {
		t.Fatal(err)
	}
	mux := nsenterBeamer(t, r.muxNS, "mux", "--config", muxCfg, "--pin-dir", muxPins, "--state-file", filepath.Join(t.TempDir(), "mux-state.json"))
	mux.waitFor(t, "mux", "mux forwarding")
	load := r.load(t)
	defer load.cancel()
	load.flowing(t, "both daemons running")
	mux.stop(t, syscall.SIGUSR2)
	agent.stop(t, syscall.SIGUSR2)
	load.flowing(t, "both daemons stopped, their programs pinned")

	// The mux: the configured table, bucket for bucket per server.
	cfg, err := config.LoadMux(muxCfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[forwarding.ServerID]int{}
	for _, b := range cfg.Instances[0].Table().Buckets {
		want[b.Current]++
	}
	var mv dataplane.MuxView
	inspectJSON(t, &mv, "mux", "inspect", "--pin-dir", muxPins, "-o", "json")
	if len(mv.VIPs) != 1 || mv.VIPs[0].VIP != arVIP || mv.VIPs[0].Buckets != arBuckets || mv.VIPs[0].Strategy != "beamer" {
		t.Fatalf("mux inspect VIPs %+v, want %v with %d buckets, beamer", mv.VIPs, arVIP, arBuckets)
	}
	vip := mv.VIPs[0]
	if len(vip.Ports) != 1 || vip.Ports[0] != "80-80/tcp" || vip.Generation == 0 {
		t.Fatalf("mux inspect VIP %+v: want ports 80-80/tcp and a generation", vip)
	}
	if len(mv.Tables) != 1 || mv.Tables[0].Unowned != 0 || len(mv.Tables[0].Servers) != 2 {
		t.Fatalf("mux inspect tables %+v, want one with servers 1030 and 1031 and every bucket owned", mv.Tables)
	}
	for _, s := range mv.Tables[0].Servers {
		wantAddr := map[forwarding.ServerID]netip.Addr{1030: arServer, 1031: arServer2}[s.ID]
		if s.Addr != wantAddr || s.Buckets != want[s.ID] || s.State != "active" {
			t.Errorf("mux inspect server %+v, want %v owning %d buckets (the configured table), active", s, wantAddr, want[s.ID])
		}
	}
	if vip.Traffic == nil || vip.Traffic.Packets == 0 || vip.Traffic.NewFlows < arEcho+arStream {
		t.Errorf("mux inspect traffic %+v: want the load's packets and its %d connections", vip.Traffic, arEcho+arStream)
	}
	if mv.Counters["fwd_bucket"] == 0 {
		var names []string
		for n, c := range mv.Counters {
			if c != 0 {
				names = append(names, n)
			}
		}
		t.Errorf("mux inspect counters: no forwarding decision counted (non-zero: %v)", names)
	}

	// The agent: its VIP with the mux's generation, its trusted sources.
	var av dataplane.AgentView
	inspectJSON(t, &av, "agent", "inspect", "--pin-dir", r.pins, "-o", "json")
	if len(av.VIPs) != 1 || av.VIPs[0].VIP != arVIP || av.VIPs[0].Buckets != arBuckets || av.VIPs[0].WindowSeconds != 240 {
		t.Fatalf("agent inspect VIPs %+v, want %v, %d buckets, window 240 s", av.VIPs, arVIP, arBuckets)
	}
	if av.VIPs[0].Generation != vip.Generation || av.VIPs[0].Incarnation != vip.Incarnation {
		t.Errorf("agent inspect saw generation %d/%d, the mux forwards with %d/%d", av.VIPs[0].Incarnation, av.VIPs[0].Generation, vip.Incarnation, vip.Generation)
	}
	if len(av.Trusted) != 1 || av.Trusted[0] != netip.MustParsePrefix("198.18.0.0/24") {
		t.Errorf("agent inspect trusted %v, want [198.18.0.0/24]", av.Trusted)
	}
	var kept uint64
	for n, c := range av.Counters {
		if strings.HasPrefix(n, "local_") || n == "to_stack" {
			kept += c
		}
	}
	if kept == 0 {
		t.Errorf("agent inspect counters %v: nothing kept for the local stack", av.Counters)
	}

	// The table form too, and the errors of a directory without pins.
	table := exec.Command(os.Args[0], "mux", "inspect", "--pin-dir", muxPins)
	table.Env = append(os.Environ(), childEnv+"=1")
	out, err := table.CombinedOutput()
	if err != nil || !strings.Contains(string(out), arServer2.String()) || !strings.Contains(string(out), "with previous owners") {
		t.Errorf("mux inspect (table): %v\n%s", err, out)
	}
	t.Logf("beamer mux inspect:\n%s", out)
	empty := t.TempDir()
	for _, daemon := range []string{"mux", "agent"} {
		cmd := exec.Command(os.Args[0], daemon, "inspect", "--pin-dir", empty)
		cmd.Env = append(os.Environ(), childEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "nothing is pinned there") {
			t.Errorf("%s inspect of an empty directory: %v, %q; want an error saying nothing is pinned", daemon, err, out)
		}
	}
	// A mux's pins are not an agent's.
	cmd := exec.Command(os.Args[0], "agent", "inspect", "--pin-dir", muxPins)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not a pin directory of this daemon") {
		t.Errorf("agent inspect of a mux's pins: %v, %q; want a refusal", err, out)
	}
}

// inspectJSON runs `beamer ARGS` (this binary) and decodes its output.
func inspectJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("beamer %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("beamer %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
