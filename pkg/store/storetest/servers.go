package storetest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needServer fails the test when CI=true (a CI machine must have every
// server installed by scripts/setup) and skips it otherwise.
func needServer(t testing.TB, format string, a ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, a...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: the setup script must install it)", msg)
	}
	t.Skipf("%s; skipping (install it, scripts/setup.sh installs it from scripts/apt-packages.txt)", msg)
}

// FreeAddr returns 127.0.0.1:port with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Server is a store server process started by a test.
type Server struct {
	Addr string // client address, 127.0.0.1:port
	cmd  *exec.Cmd
	args []string
	env  []string
	log  string
	t    testing.TB
	done chan struct{}
}

// start launches the process in its own process group with its output in
// logFile, and stops it when the test ends, however it ends.
func start(t testing.TB, addr, logFile string, env []string, args ...string) *Server {
	s := &Server{Addr: addr, args: args, env: env, log: logFile, t: t}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// Start (re)starts a stopped server and waits until it accepts TCP
// connections (30 s at most).
func (s *Server) Start() {
	s.t.Helper()
	s.launch()
	s.waitListening()
}

// launch starts the process without waiting for it to listen.
func (s *Server) launch() {
	s.t.Helper()
	out, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Env = append(os.Environ(), s.env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		s.t.Fatalf("start %s: %v", s.args[0], err)
	}
	out.Close()
	s.cmd = cmd
	s.done = make(chan struct{})
	go func() { cmd.Wait(); close(s.done) }()
}

// waitListening waits until the launched process accepts TCP
// connections (30 s at most).
func (s *Server) waitListening() {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-s.done:
			s.t.Fatalf("%s exited during start-up; log %s:\n%s", s.args[0], s.log, tail(s.log))
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("%s not listening on %s after 30 s; log:\n%s", s.args[0], s.Addr, tail(s.log))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the server (its whole process group) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Errorf("%s did not exit after SIGKILL", s.args[0])
	}
	s.cmd = nil
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// zkServerScript is where Debian's zookeeper package installs the launcher.
const zkServerScript = "/usr/share/zookeeper/bin/zkServer.sh"

// requireZooKeeper skips (fails in CI) without ZooKeeper and java.
func requireZooKeeper(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(zkServerScript); err != nil {
		needServer(t, "ZooKeeper is not installed (%s missing; Debian package zookeeper)", zkServerScript)
	}
	if _, err := exec.LookPath("java"); err != nil {
		needServer(t, "java is not installed (needed by ZooKeeper)")
	}
}

// StartZooKeeper starts a standalone ZooKeeper (Debian package zookeeper)
// on a free 127.0.0.1 port with a temporary data directory.
func StartZooKeeper(t testing.TB) *Server {
	t.Helper()
	requireZooKeeper(t)
	dir := t.TempDir()
	addr := FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cfg := strings.Join([]string{
		"tickTime=500", // session timeouts down to 1 s for tests
		"initLimit=10",
		"syncLimit=5",
		"dataDir=" + filepath.Join(dir, "data"),
		"clientPort=" + port,
		"clientPortAddress=127.0.0.1",
		"admin.enableServer=false",
		"maxClientCnxns=0",
		"",
	}, "\n")
	cfgPath := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"ZOO_LOG_DIR=" + dir, "JVMFLAGS=-Xmx256m -XX:+UseSerialGC", "ZOO_LOG4J_PROP=WARN,CONSOLE"}
	return start(t, addr, filepath.Join(dir, "zookeeper.log"), env, zkServerScript, "start-foreground", cfgPath)
}

// StartEtcd starts an etcd server process (Debian package etcd-server) on
// free 127.0.0.1 ports with a temporary data directory.
func StartEtcd(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		needServer(t, "etcd is not installed (Debian package etcd-server)")
	}
	dir := t.TempDir()
	addr, peer := FreeAddr(t), FreeAddr(t)
	return start(t, addr, filepath.Join(dir, "etcd.log"), nil, bin,
		"--name", "test",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", "http://"+addr,
		"--advertise-client-urls", "http://"+addr,
		"--listen-peer-urls", "http://"+peer,
		"--initial-advertise-peer-urls", "http://"+peer,
		"--initial-cluster", "test=http://"+peer,
		"--log-level", "warn")
}

// Context returns a context that ends with the test, bounded to 2 minutes.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
