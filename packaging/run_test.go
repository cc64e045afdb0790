package packaging

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

// inRoot maps a path the unit names (/etc/..., /var/lib/..., an embed://
// store under /var/lib) into the private root the package was installed in.
func inRoot(root, assignment string) string {
	k, v, _ := strings.Cut(assignment, "=")
	switch {
	case strings.HasPrefix(v, "/etc/"), strings.HasPrefix(v, "/var/lib/"), strings.HasPrefix(v, "/usr/"):
		v = root + v
	case strings.HasPrefix(v, "embed:///var/lib/"):
		v = "embed://" + root + strings.TrimPrefix(v, "embed://")
	}
	return k + "=" + v
}

// notifications is a NOTIFY_SOCKET: what a daemon sends systemd.
type notifications struct {
	path string
	mu   sync.Mutex
	got  []string
}

func listenNotify(t *testing.T, dir, name string) *notifications {
	t.Helper()
	n := &notifications{path: filepath.Join(dir, name+".notify")}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	// The controller sends as the unprivileged user beamer.
	if err := os.Chmod(n.path, 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		b := make([]byte, 4096)
		for {
			k, err := c.Read(b)
			if err != nil {
				return
			}
			n.mu.Lock()
			n.got = append(n.got, strings.Split(strings.TrimSpace(string(b[:k])), "\n")...)
			n.mu.Unlock()
		}
	}()
	return n
}

func (n *notifications) has(state string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.got {
		if s == state {
			return true
		}
	}
	return false
}

// waitReady waits for READY=1 (a generous bound: CI runs floods beside us).
func (n *notifications) waitReady(t *testing.T, what string, out *output) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !n.has("READY=1"); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no READY=1 on NOTIFY_SOCKET (Type=notify would time out); output:\n%s", what, out.String())
		}
	}
}

// start runs the unit's ExecStart in ns as systemd would: a clean
// environment of its Environment= lines, then what its EnvironmentFile sets;
// its User= (uid and gid from the private root's passwd), only the
// capabilities of AmbientCapabilities= within CapabilityBoundingSet=,
// NoNewPrivileges=, NOTIFY_SOCKET. Paths under /etc and /var/lib are the
// private root's. bpffs is mounted in the command's mount namespace (ip netns
// exec remounts /sys; systemd mounts it on a host). SIGTERM at the end, as
// systemctl stop.
func start(t *testing.T, ns *netlab.Namespace, root string, u unit, ids [2]string, notify *notifications) (*exec.Cmd, *output) {
	t.Helper()
	env := []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "NOTIFY_SOCKET=" + notify.path}
	for _, e := range u.env {
		env = append(env, inRoot(root, e))
	}
	if u.envFile != "" {
		_, set := envFileVars(t, root+u.envFile)
		for _, e := range set {
			env = append(env, inRoot(root, e))
		}
	}
	priv := []string{"--inh-caps=" + setprivCaps(u.caps), "--ambient-caps=" + setprivCaps(u.caps), "--bounding-set=" + setprivCaps(u.bound)}
	if u.user != "" {
		priv = append(priv, "--reuid="+ids[0], "--regid="+ids[1], "--clear-groups")
	}
	if u.noNew {
		priv = append(priv, "--no-new-privs")
	}
	args := []string{"netns", "exec", ns.Name, "sh", "-c", `mount -t bpf bpf /sys/fs/bpf && exec "$@"`, "sh", "setpriv"}
	args = append(args, priv...)
	args = append(args, "env", "-i")
	args = append(args, env...)
	args = append(args, root+u.exec[0])
	args = append(args, u.exec[1:]...)
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
