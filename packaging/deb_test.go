// Package packaging holds the test of the Debian package: built by `make
// deb` (scripts/deb.sh, nfpm), installed with dpkg on this machine, its
// units' ExecStart lines run as systemd would run them (no systemd here),
// then purged.
package packaging

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/netlab"
	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
)

// unit is what the test takes from a systemd unit: its environment and
// its command line.
type unit struct {
	env  []string
	exec []string
}

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var u unit
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		switch {
		case !ok:
		case k == "Environment":
			u.env = append(u.env, v)
		case k == "ExecStart":
			u.exec = strings.Fields(v)
		}
	}
	if len(u.exec) == 0 {
		t.Fatalf("%s: no ExecStart", path)
	}
	return u
}

// output collects a process's output while the test reads it.
type output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *output) Write(p []byte) (int, error) { o.mu.Lock(); defer o.mu.Unlock(); return o.b.Write(p) }
func (o *output) String() string              { o.mu.Lock(); defer o.mu.Unlock(); return o.b.String() }

// start runs the unit's ExecStart in ns with its Environment= lines plus
// extra (what an /etc/default file would add); SIGTERM at the end, as
// systemctl stop.
func start(t *testing.T, ns *netlab.Namespace, u unit, extra ...string) (*exec.Cmd, *output) {
	t.Helper()
	args := append([]string{"netns", "exec", ns.Name, "env"}, append(append(u.env, extra...), u.exec...)...)
	cmd := exec.Command("ip", args...)
	out := &output{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return cmd, out
}

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

func TestDebianPackage(t *testing.T) {
	if os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the package test needs root (dpkg, namespaces)")
		}
		t.Skip("needs root: dpkg -i and network namespaces")
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Fatalf("no dpkg: %v", err)
	}
	if out, err := exec.Command("dpkg-query", "-W", "-f=${Status}", "beamer").CombinedOutput(); err == nil && strings.Contains(string(out), "installed") {
		t.Fatalf("a beamer package is already installed on this machine (%s): not replacing it", out)
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

	build := exec.Command("../scripts/deb.sh")
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("make deb: %v\n%s", err, out)
	}
	debs, _ := filepath.Glob("../dist/beamer_*_amd64.deb")
	if len(debs) == 0 {
		t.Fatalf("no .deb in dist/:\n%s", out)
	}
	deb := debs[len(debs)-1]
	if out, err := exec.Command("dpkg", "-i", deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg -i %s: %v\n%s", deb, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("dpkg", "--purge", "beamer").CombinedOutput(); err != nil {
			t.Errorf("dpkg --purge beamer: %v\n%s", err, out)
		}
		if _, err := os.Stat("/usr/bin/beamer"); err == nil {
			t.Error("/usr/bin/beamer still there after purge")
		}
		os.Remove(deb)
	})
	for _, f := range []string{"/usr/bin/beamer", "/etc/beamer/mux.yaml", "/etc/beamer/agent.yaml", "/usr/share/beamer/dashboards/beamer.json", "/usr/share/beamer/store-certs.sh", "/usr/share/doc/beamer/examples/controller.yaml",
		"/lib/systemd/system/beamer-mux.service", "/lib/systemd/system/beamer-agent.service", "/lib/systemd/system/beamer-controller.service"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("not installed: %v", err)
		}
	}
	if out, err := exec.Command("/usr/bin/beamer", "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "beamer ") {
		t.Fatalf("beamer version: %v %s", err, out)
	}

	// The hosts of the example files: a mux at 198.18.0.1, a server at
	// 198.18.0.10 (examples/*.yaml), a controller.
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
	muxProc, muxOut := start(t, mux, readUnit(t, "/lib/systemd/system/beamer-mux.service"))
	// The example's agent API is on the DIP: plaintext there needs
	// BEAMER_INSECURE (/etc/default/beamer-agent), or BEAMER_API_CERT,
	// BEAMER_API_KEY and BEAMER_API_CA (docs/operations.md, "Trust boundaries").
	_, agentOut := start(t, srv, readUnit(t, "/lib/systemd/system/beamer-agent.service"), "BEAMER_INSECURE=true")
	// The controller's store: what /etc/default/beamer-controller would say
	// (not /var/lib/beamer of this machine).
	_, ctlOut := start(t, ctl, readUnit(t, "/lib/systemd/system/beamer-controller.service"), "BEAMER_STORE=embed://"+t.TempDir())
	healthz(t, mux, "127.0.0.1:9100", "mux", muxOut)
	healthz(t, srv, "127.0.0.1:9101", "agent", agentOut)
	healthz(t, ctl, "127.0.0.1:9102", "controller", ctlOut)
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
