package beamercli

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestReloadOnHangup: SIGHUP makes `beamer mux --config` and `beamer agent
// --config` apply their edited files (seen in what their data planes hold,
// `mux status`, `agent status`); a broken file is refused, the daemon keeps
// running with what it had.
func TestReloadOnHangup(t *testing.T) {
	mux, srv := netlabtest.NewRig(t, "reload").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "srv", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	dir := t.TempDir()
	muxCfg, agentCfg := filepath.Join(dir, "mux.yaml"), filepath.Join(dir, "agent.yaml")
	writeFile := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const muxHead = "interface: eth0\nxdp_mode: generic\nmetrics: 127.0.0.1:9100\ninstances:\n"
	web := "  - {name: web, vips: [198.18.100.1], port_low: 80, port_high: 80, buckets: 100, servers: [{id: 1025, address: 198.18.0.10}]}\n"
	writeFile(muxCfg, muxHead+web)
	const agentHead = "interface: eth0\nserver_id: 1025\ntrusted: [198.18.0.0/24]\nmptcp: false\napi: \"off\"\nmetrics: 127.0.0.1:9101\nvips:\n"
	writeFile(agentCfg, agentHead+"  - {vip: 198.18.100.1, buckets: 100}\n")
	pins := netlabtest.PinDir(t, "reload")
	m := beamer(t, mux, "mux", "--config", muxCfg, "--pin-dir", "-", "--state-file", filepath.Join(dir, "mux-state.json"))
	a := beamer(t, srv, "agent", "--config", agentCfg, "--pin-dir", pins, "--state-file", filepath.Join(dir, "agent-state.json"))

	// eventually waits until `WHAT status` prints every string of want.
	eventually := func(what string, ns *netlab.Namespace, p *proc, want ...string) {
		t.Helper()
		var out string
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			out, _ = beamerRun(t, ns, what, "status", "--metrics", map[string]string{"mux": "127.0.0.1:9100", "agent": "127.0.0.1:9101"}[what])
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(out, w)
			}
			if ok {
				return
			}
		}
		t.Fatalf("%s status never showed %q:\n%s\ndaemon:\n%s", what, want, out, p.output())
	}
	hup := func(p *proc) {
		t.Helper()
		if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	eventually("mux", mux, m, "web       198.18.100.1")
	eventually("agent", srv, a, "198.18.100.1  100")

	// The mux: a server more in web, a new instance api.
	writeFile(muxCfg, muxHead+strings.Replace(web, "}]}", "}, {id: 1026, address: 198.18.0.11}]}", 1)+
		"  - {name: api, vips: [198.18.100.2], port_low: 443, port_high: 443, buckets: 50, servers: [{id: 1025, address: 198.18.0.10}]}\n")
	hup(m)
	eventually("mux", mux, m, "api       198.18.100.2", "-> 1026  198.18.0.11  active  50")
	// A broken file is refused; web and api stay.
	writeFile(muxCfg, muxHead+"  - {name: web, vips: [198.18.100.1], port_low: 80, port_high: 80, buckets: 1}\n")
	hup(m)
	m.waitFor(t, "mux", "SIGHUP: configuration refused, the running one stays")
	eventually("mux", mux, m, "api       198.18.100.2", "-> 1026  198.18.0.11  active  50")
	// Dropping api from the file removes it.
	writeFile(muxCfg, muxHead+web)
	hup(m)
	eventually("mux", mux, m, "-> 1025  198.18.0.10  active  100")
	if out, _ := beamerRun(t, mux, "mux", "status", "--metrics", "127.0.0.1:9100"); strings.Contains(out, "api") {
		t.Errorf("api still loaded:\n%s", out)
	}

	// The agent: another bucket count and a second VIP.
	writeFile(agentCfg, agentHead+"  - {vip: 198.18.100.1, buckets: 200}\n  - {vip: 198.18.100.2, buckets: 50}\n")
	hup(a)
	eventually("agent", srv, a, "198.18.100.1  200", "198.18.100.2  50")
	if out, _ := srv.Run("ip", "addr", "show", "lo"); !strings.Contains(out, "198.18.100.2") {
		t.Errorf("new VIP not on lo:\n%s", out)
	}
	writeFile(agentCfg, "interface: eth0\n")
	hup(a)
	a.waitFor(t, "agent", "SIGHUP: configuration refused, the running one stays")
	eventually("agent", srv, a, "198.18.100.1  200", "198.18.100.2  50")
	select {
	case <-m.done:
		t.Fatalf("mux exited:\n%s", m.output())
	case <-a.done:
		t.Fatalf("agent exited:\n%s", a.output())
	default:
	}
}
