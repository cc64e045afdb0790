// Package packaging holds the test of the Debian package: built by `make
// deb` (scripts/deb.sh, nfpm) offline from the module cache, installed with
// dpkg into a private root (its maintainer scripts run there), its units
// checked (ExecStart against the binary's own flags, /etc/default files,
// capabilities, users, `systemd-analyze security` scores) and their
// ExecStart lines run as systemd would run them (no systemd here: the unit's
// user, capabilities and environment, the READY=1 notification), then purged
// without leftovers.
package packaging

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// daemon is what the package promises of each unit.
type daemon struct {
	unit     string
	command  string   // beamer COMMAND
	user     string   // User=
	caps     []string // the capabilities it runs with (AmbientCapabilities= = CapabilityBoundingSet=)
	maxScore float64  // systemd-analyze security's exposure, at most
}

var daemons = []daemon{
	{"beamer-controller.service", "controller", "beamer", nil, 3.0},
	{"beamer-mux.service", "mux", "", []string{"CAP_BPF", "CAP_NET_ADMIN", "CAP_PERFMON"}, 4.5},
	{"beamer-agent.service", "agent", "", []string{"CAP_BPF", "CAP_NET_ADMIN", "CAP_PERFMON"}, 4.5},
}

var exposure = regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+)`)

// securityScore is `systemd-analyze security --offline=true UNITFILE`: it
// reads the file alone, so it works where systemd is not PID 1.
func securityScore(t *testing.T, path string) float64 {
	t.Helper()
	out, err := exec.Command("systemd-analyze", "security", "--offline=true", "--no-pager", path).CombinedOutput()
	m := exposure.FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security %s: %v\n%s", path, err, out)
	}
	f, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDebianPackage(t *testing.T) {
	netlabtest.RequireRootFor(t, "dpkg into a private root, setpriv and network namespaces")
	for _, tool := range []string{"dpkg", "dpkg-query", "setpriv", "systemd-analyze", "ip", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (make setup installs it: scripts/apt-packages.txt)", tool, err)
		}
	}
	// go install …/cmd/beamer@latest needs the generated eBPF objects and
	// bindings in the repository (make test checks they match bpf/).
	ls, err := exec.Command("git", "-C", "..", "ls-files", "pkg/dataplane", "research/bench/dpbench").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"pkg/dataplane/mux", "pkg/dataplane/agent", "pkg/dataplane/hashprobe",
		"research/bench/dpbench/muxbench", "research/bench/dpbench/agentbench"} {
		for _, ext := range []string{".o", ".go"} {
			if f := n + "_bpfel" + ext; !strings.Contains(string(ls), f+"\n") {
				t.Errorf("%s is not committed: go install cannot build", f)
			}
		}
	}

	// make deb, offline: every module (nfpm's too) from the module cache.
	v, err := exec.Command("../scripts/version.sh").Output()
	if err != nil {
		t.Fatalf("scripts/version.sh: %v", err)
	}
	version := strings.TrimSpace(string(v))
	build := exec.Command("../scripts/deb.sh")
	build.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod", "VERSION="+version)
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("make deb offline (GOPROXY=off): %v\n%s", err, out)
	}
	deb := "../dist/beamer_" + version + "_amd64.deb"
	if _, err := os.Stat(deb); err != nil {
		t.Fatalf("make deb: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.Remove(deb) })

	// A private root: an empty dpkg database, the maintainer scripts run
	// outside a chroot with DPKG_ROOT set (they honour it). Readable by the
	// controller's user, which runs from it below.
	root, err := os.MkdirTemp("", "beamer-deb-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dpkg := func(args ...string) {
		t.Helper()
		// --force-depends: iproute2 and systemd are this machine's, not the root's.
		cmd := exec.Command("dpkg", append([]string{"--root=" + root, "--force-script-chrootless", "--force-depends", "--log=/dev/null"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dpkg %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	dpkg("-i", deb)
	// Purged at the end, after the daemons stopped (cleanups run last first).
	t.Cleanup(func() {
		dpkg("--purge", "beamer")
		checkPurged(t, root)
	})

	cf, err := exec.Command("dpkg-query", "--admindir="+root+"/var/lib/dpkg", "-W", "-f=${Conffiles}", "beamer").Output()
	if err != nil {
		t.Fatal(err)
	}
	conffiles := string(cf)
	for _, f := range []string{"/etc/default/beamer-mux", "/etc/default/beamer-agent", "/etc/default/beamer-controller", "/etc/beamer/mux.yaml", "/etc/beamer/agent.yaml"} {
		if !strings.Contains(conffiles, " "+f+" ") {
			t.Errorf("%s is not a conffile: %s", f, conffiles)
		}
	}
	checkInstalled(t, root, version, conffiles)

	// The beamer user and its state directory (postinst).
	ids := passwdEntry(t, root, "beamer")
	if st, err := os.Stat(root + "/var/lib/beamer"); err != nil {
		t.Error(err)
	} else if sys := st.Sys().(*syscall.Stat_t); strconv.Itoa(int(sys.Uid)) != ids[0] || st.Mode().Perm() != 0o700 {
		t.Errorf("/var/lib/beamer: uid %d mode %v, want uid %s (beamer) mode 0700", sys.Uid, st.Mode().Perm(), ids[0])
	}

	// The units: what they run, with what, and how exposed.
	units := map[string]unit{}
	for _, d := range daemons {
		u := readUnit(t, root+"/lib/systemd/system/"+d.unit)
		units[d.unit] = u
		checkUnit(t, root, d, u, conffiles)
		score := securityScore(t, u.path)
		t.Logf("%s: systemd-analyze security exposure %.1f (at most %.1f)", d.unit, score, d.maxScore)
		if score > d.maxScore {
			t.Errorf("%s: systemd-analyze security exposure %.1f > %.1f", d.unit, score, d.maxScore)
		}
	}
	if t.Failed() {
		return
	}

	// Run them. The hosts of the example files: a mux at 198.18.0.1, a
	// server at 198.18.0.10 (examples/*.yaml), a controller.
	rig := netlabtest.NewRig(t, "deb")
	mux, srv := rig.Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "srv", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	ctl := rig.Namespace("ctl")
	if err := ctl.Do(func() error { return exec.Command("ip", "link", "set", "lo", "up").Run() }); err != nil {
		t.Fatal(err)
	}
	// What an operator of this lab edits: the mux is on a veth, where the
	// unit's capabilities want generic XDP (beamer-mux.service); the agent's
	// API is on the DIP, plaintext there needs BEAMER_INSECURE
	// (docs/operations.md, "Trust boundaries").
	editFile(t, root+"/etc/beamer/mux.yaml", "xdp_mode: driver ", "xdp_mode: generic")
	appendFile(t, root+"/etc/default/beamer-agent", "BEAMER_INSECURE=true\n")

	sockets, err := os.MkdirTemp("", "beamer-deb-notify-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockets) })
	os.Chmod(sockets, 0o755)
	muxReady, agentReady, ctlReady := listenNotify(t, sockets, "mux"), listenNotify(t, sockets, "agent"), listenNotify(t, sockets, "controller")
	// The agent leaves its state file in /run/beamer (this machine's: the
	// binary's default) for `beamer agent cleanup`; the lab's namespace goes,
	// so does the file, once the agent stopped.
	var nsStat syscall.Stat_t
	if err := syscall.Stat("/run/netns/"+srv.Name, &nsStat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		left, _ := filepath.Glob(fmt.Sprintf("/run/beamer/agent-%d-eth0.json*", nsStat.Ino))
		for _, f := range left {
			os.Remove(f)
		}
	})
	muxProc, muxOut := start(t, mux, root, units["beamer-mux.service"], ids, muxReady)
	_, agentOut := start(t, srv, root, units["beamer-agent.service"], ids, agentReady)
	_, ctlOut := start(t, ctl, root, units["beamer-controller.service"], ids, ctlReady)
	muxReady.waitReady(t, "mux", muxOut)
	agentReady.waitReady(t, "agent", agentOut)
	ctlReady.waitReady(t, "controller", ctlOut)
	healthz(t, mux, "127.0.0.1:9100", "mux", muxOut)
	healthz(t, srv, "127.0.0.1:9101", "agent", agentOut)
	healthz(t, ctl, "127.0.0.1:9102", "controller", ctlOut)
	// The controller's probe through the agent's API works with the unit's
	// capabilities (the agent connects to the service from its namespace).
	probeAgent(t, srv, agentOut)
	// The controller's embedded store is in /var/lib/beamer, written as beamer.
	if _, err := os.Stat(root + "/var/lib/beamer/etcd/member"); err != nil {
		t.Errorf("the embedded store is not in /var/lib/beamer: %v\n%s", err, ctlOut.String())
	}
	// systemctl reload (ExecReload: kill -HUP) re-reads the file; the mux stays up.
	if err := muxProc.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(muxOut.String(), "configuration reloaded"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("mux: no reload after SIGHUP:\n%s", muxOut.String())
		}
	}
	healthz(t, mux, "127.0.0.1:9100", "mux after SIGHUP", muxOut)
}
