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
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/netlab"
	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
)

// output collects a process's output while the test reads it.
type output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *output) Write(p []byte) (int, error) { o.mu.Lock(); defer o.mu.Unlock(); return o.b.Write(p) }
func (o *output) String() string              { o.mu.Lock(); defer o.mu.Unlock(); return o.b.String() }

// healthz polls GET /healthz on addr inside ns until it answers 200.
func healthz(t *testing.T, ns *netlab.Namespace, addr, what string, out *output) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var conn net.Conn
		if err := ns.Do(func() (err error) { conn, err = net.Dial("tcp", addr); return err }); err != nil {
			last = err.Error()
			continue
		}
		c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}}
		resp, err := c.Get("http://" + addr + "/healthz")
		if err != nil {
			last = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			return
		}
		last = fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	t.Fatalf("%s: /healthz on %s never 200 (%s); output:\n%s", what, addr, last, out.String())
}

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
	if os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the package test needs root (dpkg, namespaces)")
		}
		t.Skip("needs root: dpkg into a private root, setpriv and network namespaces")
	}
	for _, tool := range []string{"dpkg", "dpkg-query", "setpriv", "systemd-analyze", "ip", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s: %v (make setup installs it: scripts/apt-packages.txt)", tool, err)
		}
	}
	// go install …/cmd/beamer@latest needs the generated eBPF objects and
	// bindings in the repository (make test checks they match bpf/).
	ls, err := exec.Command("git", "-C", "..", "ls-files", "pkg/dataplane").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"mux", "agent", "muxbench", "agentbench", "hashprobe"} {
		for _, ext := range []string{".o", ".go"} {
			if f := "pkg/dataplane/" + n + "_bpfel" + ext; !strings.Contains(string(ls), f+"\n") {
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

	for _, f := range []string{"/usr/bin/beamer", "/etc/beamer/mux.yaml", "/etc/beamer/agent.yaml", "/usr/share/beamer/dashboards/beamer.json", "/usr/share/beamer/store-certs.sh",
		"/usr/share/doc/beamer/examples/controller.yaml", "/usr/share/doc/beamer/copyright", "/usr/share/doc/beamer/CHANGELOG.md", "/usr/share/doc/beamer/NOTICE",
		"/usr/lib/sysusers.d/beamer.conf", "/etc/default/beamer-mux", "/etc/default/beamer-agent", "/etc/default/beamer-controller",
		"/lib/systemd/system/beamer-mux.service", "/lib/systemd/system/beamer-agent.service", "/lib/systemd/system/beamer-controller.service"} {
		if _, err := os.Stat(root + f); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	if b, err := os.ReadFile(root + "/usr/share/doc/beamer/copyright"); err != nil || !strings.Contains(string(b), "License: Apache-2.0") || !strings.Contains(string(b), "GPL-2.0-only or BSD-2-Clause") {
		t.Errorf("copyright names the licences: %v\n%s", err, b)
	}
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
	beamer := root + "/usr/bin/beamer"
	if out, err := exec.Command(beamer, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "beamer v"+version+" ") {
		t.Errorf("beamer version: want beamer v%s (the package's version): %v %s", version, err, out)
	}

	// Man pages and completions, generated from the commands.
	for _, page := range []string{"beamer", "beamer-mux", "beamer-agent", "beamer-controller", "beamer-ctl", "beamer-ctl-show", "beamer-version"} {
		text := gunzip(t, root+"/usr/share/man/man1/"+page+".1.gz")
		if want := strings.ReplaceAll(strings.TrimPrefix(page, "beamer"), "-", " "); !strings.Contains(text, `.TH "`+strings.ToUpper(page)+`" "1"`) || !strings.Contains(strings.ReplaceAll(text, `\-`, "-"), "beamer"+want) {
			t.Errorf("%s.1: not the page of beamer%s:\n%.300s", page, want, text)
		}
	}
	if text := strings.ReplaceAll(gunzip(t, root+"/usr/share/man/man1/beamer-mux.1.gz"), `\-`, "-"); !strings.Contains(text, "--metrics") || !strings.Contains(text, "BEAMER_CONFIG") {
		t.Errorf("beamer-mux.1 lacks the flags and their variables:\n%.500s", text)
	}
	for f, want := range map[string]string{
		"/usr/share/bash-completion/completions/beamer":    "__start_beamer",
		"/usr/share/zsh/vendor-completions/_beamer":        "#compdef beamer",
		"/usr/share/fish/vendor_completions.d/beamer.fish": "complete -c beamer",
	} {
		if b, err := os.ReadFile(root + f); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("completion %s: %v (want %q)", f, err, want)
		}
	}

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
	lab := netlabtest.New(t, "deb")
	mux, err := lab.Namespace("mux")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := lab.Namespace("srv")
	if err != nil {
		t.Fatal(err)
	}
	ctl, err := lab.Namespace("ctl")
	if err != nil {
		t.Fatal(err)
	}
	if err := lab.Veth(mux, "eth0", netip.MustParsePrefix("198.18.0.1/24"), srv, "eth0", netip.MustParsePrefix("198.18.0.10/24"), 1600); err != nil {
		t.Fatal(err)
	}
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

// probeAgent asks the agent's API, as the controller does, to probe a
// service on the example's VIP (198.18.100.1:80, on lo: manage_vips).
func probeAgent(t *testing.T, srv *netlab.Namespace, out *output) {
	t.Helper()
	var ln net.Listener
	if err := srv.Do(func() (err error) { ln, err = net.Listen("tcp", "198.18.100.1:80"); return err }); err != nil {
		t.Fatalf("a service on the VIP: %v\n%s", err, out.String())
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var conn net.Conn
	if err := srv.Do(func() (err error) { conn, err = net.Dial("tcp", "198.18.0.10:9300"); return err }); err != nil {
		t.Fatalf("agent API: %v\n%s", err, out.String())
	}
	c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}}
	resp, err := c.Get("http://198.18.0.10:9300/v1/health?vip=198.18.100.1&port=80")
	if err != nil {
		t.Fatalf("agent API probe: %v\n%s", err, out.String())
	}
	defer resp.Body.Close()
	var rep struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &rep); err != nil || resp.StatusCode != 200 || !rep.OK {
		t.Errorf("agent API probe of 198.18.100.1:80: %d %s (%v)", resp.StatusCode, b, err)
	}
}

// checkUnit: Type=notify; ExecStart runs the installed binary's command,
// which accepts it (its --help parses the same arguments); every variable
// the unit and its /etc/default file name is one the command reads; the
// file is shipped as a conffile; the user and capabilities are the
// package's promise.
func checkUnit(t *testing.T, root string, d daemon, u unit, conffiles string) {
	t.Helper()
	if u.typ != "notify" {
		t.Errorf("%s: Type=%s, want notify", d.unit, u.typ)
	}
	if u.exec[0] != "/usr/bin/beamer" || len(u.exec) < 2 || u.exec[1] != d.command {
		t.Errorf("%s: ExecStart=%v, want /usr/bin/beamer %s", d.unit, u.exec, d.command)
		return
	}
	help, err := exec.Command(root+u.exec[0], append(u.exec[1:], "--help")...).CombinedOutput()
	if err != nil || !strings.Contains(string(help), "beamer "+d.command+" [flags]") {
		t.Errorf("%s: %v --help: %v\n%s", d.unit, u.exec, err, help)
	}
	reads := map[string]bool{}
	for _, m := range regexp.MustCompile(`env (BEAMER_[A-Z0-9_]+)`).FindAllStringSubmatch(string(help), -1) {
		reads[m[1]] = true
	}
	want := "/etc/default/" + strings.TrimSuffix(d.unit, ".service")
	if u.envFile != want {
		t.Errorf("%s: EnvironmentFile=%s, want %s", d.unit, u.envFile, want)
	} else if !strings.Contains(conffiles, " "+want+" ") {
		t.Errorf("%s: %s is not a conffile", d.unit, want)
	}
	named, _ := envFileVars(t, root+want)
	for _, e := range u.env {
		k, _, _ := strings.Cut(e, "=")
		named = append(named, k)
	}
	for _, k := range named {
		if !reads[k] {
			t.Errorf("%s: %s names %s, which beamer %s does not read", d.unit, want, k, d.command)
		}
	}
	if len(named) < 3 {
		t.Errorf("%s: %s documents only %v", d.unit, want, named)
	}
	if u.user != d.user {
		t.Errorf("%s: User=%q, want %q", d.unit, u.user, d.user)
	}
	if d.user != "" && u.state != "beamer" {
		t.Errorf("%s: StateDirectory=%q, want beamer", d.unit, u.state)
	}
	if !slices.Equal(u.caps, d.caps) || !slices.Equal(u.bound, d.caps) {
		t.Errorf("%s: AmbientCapabilities=%v CapabilityBoundingSet=%v, want %v", d.unit, u.caps, u.bound, d.caps)
	}
	if !u.noNew {
		t.Errorf("%s: no NoNewPrivileges=yes", d.unit)
	}
}

// passwdEntry is the uid and gid of name in root's /etc/passwd.
func passwdEntry(t *testing.T, root, name string) [2]string {
	t.Helper()
	b, err := os.ReadFile(root + "/etc/passwd")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Split(line, ":"); len(f) >= 7 && f[0] == name {
			if f[5] != "/var/lib/beamer" || !strings.HasSuffix(f[6], "nologin") {
				t.Errorf("user %s: home %s shell %s", name, f[5], f[6])
			}
			return [2]string{f[2], f[3]}
		}
	}
	t.Fatalf("no user %s in the root's /etc/passwd:\n%s", name, b)
	return [2]string{}
}

// checkPurged: nothing of the package or its daemons is left in the root
// but the dpkg database and the (now beamer-less) user files.
func checkPurged(t *testing.T, root string) {
	t.Helper()
	kept := map[string]bool{"etc": true, "var": true, "var/lib": true, "etc/.pwd.lock": true}
	for _, f := range []string{"passwd", "group", "shadow", "gshadow"} {
		kept["etc/"+f], kept["etc/"+f+"-"] = true, true
		if b, err := os.ReadFile(filepath.Join(root, "etc", f)); err == nil && regexp.MustCompile(`(?m)^beamer:`).Match(b) {
			t.Errorf("purge left the user or group beamer in /etc/%s", f)
		}
	}
	filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(root, p)
		switch {
		case err != nil:
			t.Error(err)
		case rel == "." || kept[rel]:
		case rel == "var/lib/dpkg":
			return filepath.SkipDir
		default:
			t.Errorf("left after purge: /%s", rel)
		}
		return nil
	})
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Error(err)
		return ""
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Error(err)
	}
	return string(b)
}

func editFile(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s: no %q", path, old)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}
