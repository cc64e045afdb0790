package packaging

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

// checkInstalled: the package's files are where an operator looks for them
// (binary, units, /etc/default and example files as conffiles, sysusers,
// docs and licences, man pages and completions generated from the
// commands), and the binary says the package's version.
func checkInstalled(t *testing.T, root, version, conffiles string) {
	t.Helper()
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
	// The lab's commands are beamer-lab's, which the package does not ship.
	for _, f := range []string{"/usr/bin/beamer-lab", "/usr/share/man/man1/beamer-demo.1.gz", "/usr/share/man/man1/beamer-lab.1.gz",
		"/usr/share/man/man1/beamer-sim.1.gz", "/usr/share/man/man1/beamer-bench.1.gz"} {
		if _, err := os.Stat(root + f); err == nil {
			t.Errorf("installed, but the package ships the product only: %s", f)
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
