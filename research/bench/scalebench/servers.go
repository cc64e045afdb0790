package scalebench

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// server is a store server process the benchmark started: a real etcd or
// ZooKeeper, as an operator would run it, on a free loopback port, with its
// data in a temporary directory. pkg/store/storetest starts the same
// servers for tests; this copy works outside `go test` (no testing.TB).
type server struct {
	URL  string // store URL for storeurl.Open
	kind string
	addr string // client address
	cmd  *exec.Cmd
	dir  string
	done chan struct{}
}

// zkServerScript is where Debian's zookeeper package installs the launcher.
const zkServerScript = "/usr/share/zookeeper/bin/zkServer.sh"

// zkSimpleLogger is SLF4J's simple binding (Debian's libslf4j-java).
// The zookeeper package puts no binding on the server's class path, so
// the server logs nothing at all; with this one it logs to stderr (its
// server.log here), whose tail goes into the error when a server gives
// no session.
const zkSimpleLogger = "/usr/share/java/slf4j-simple.jar"

// zkJVMFlags are the server's JVM flags: a heap bound, and the class path
// of zkEnv.sh with the simple logger when it is installed (a second -cp,
// after the launcher's, replaces it).
func zkJVMFlags() string {
	flags := "-Xmx1g -XX:+UseSerialGC"
	if _, err := os.Stat(zkSimpleLogger); err == nil {
		flags += " -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar:" + zkSimpleLogger +
			" -Dorg.slf4j.simpleLogger.defaultLogLevel=info -Dorg.slf4j.simpleLogger.showDateTime=true"
	}
	return flags
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startStore starts the named store ("etcd" or "zookeeper").
func startStore(kind string) (*server, error) {
	dir, err := os.MkdirTemp("", "beamer-scalebench-")
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	var args, env []string
	var url string
	switch kind {
	case "etcd":
		bin, err := exec.LookPath("etcd")
		if err != nil {
			return nil, errors.New("etcd is not installed (Debian package etcd-server; scripts/setup.sh installs it)")
		}
		peer, err := freeAddr()
		if err != nil {
			return nil, err
		}
		// Defaults of etcd otherwise (max-txn-ops 128, 1.5 MiB requests):
		// the controller must live with them, as with an operator's cluster.
		args = []string{bin, "--name", "bench", "--data-dir", filepath.Join(dir, "data"),
			"--listen-client-urls", "http://" + addr, "--advertise-client-urls", "http://" + addr,
			"--listen-peer-urls", "http://" + peer, "--initial-advertise-peer-urls", "http://" + peer,
			"--initial-cluster", "bench=http://" + peer, "--log-level", "warn",
			"--quota-backend-bytes", fmt.Sprint(8 << 30)}
		url = "etcd://" + addr + "?timeout=60s" // a loaded machine starts slowly
	case "zookeeper", "zk":
		if _, err := os.Stat(zkServerScript); err != nil {
			return nil, fmt.Errorf("ZooKeeper is not installed (%s missing; Debian package zookeeper)", zkServerScript)
		}
		_, port, _ := net.SplitHostPort(addr)
		cfg := strings.Join([]string{"tickTime=2000", "initLimit=10", "syncLimit=5",
			"dataDir=" + filepath.Join(dir, "data"), "clientPort=" + port, "clientPortAddress=127.0.0.1",
			"admin.enableServer=false", "maxClientCnxns=0", "4lw.commands.whitelist=srvr", ""}, "\n")
		path := filepath.Join(dir, "zoo.cfg")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			return nil, err
		}
		args = []string{zkServerScript, "start-foreground", path}
		env = []string{"ZOO_LOG_DIR=" + dir, "JVMFLAGS=" + zkJVMFlags()}
		url = "zk://" + addr + "?timeout=60s" // the JVM serves late on a loaded machine
	default:
		return nil, fmt.Errorf("unknown store %q: etcd or zookeeper", kind)
	}
	log, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", args[0], err)
	}
	s := &server{URL: url, kind: kind, addr: addr, cmd: cmd, dir: dir, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	ready := listening
	if kind == "zookeeper" || kind == "zk" {
		ready = zkServing
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ready(addr) {
			return s, nil
		}
		select {
		case <-s.done:
			b, _ := os.ReadFile(log.Name())
			s.stop()
			return nil, fmt.Errorf("%s exited during start-up: %s", kind, tail(b))
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s not listening on %s after 60 s", kind, addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// listening: the server accepts connections on addr.
func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

// zkServing: the ZooKeeper server on addr serves: its answer to "srvr"
// is its statistics, not "This ZooKeeper instance is not currently serving
// requests". A server accepts connections before it serves them, and a
// client whose first handshake meets such a server waits for it up to ten
// read timeouts (go-zookeeper: over a minute at a 10 s session): on a
// loaded machine the store then gave no session within its 60 s, twice in
// a row, in CI and in scripts/perf-doc.sh. This waited for "ruok" to say
// "imok" before, which a server says as soon as it runs: just after it,
// "srvr" was seen to answer that the server is not serving yet.
func zkServing(addr string) bool {
	s := server{kind: "zookeeper", addr: addr}
	return strings.HasPrefix(s.state(), "Zookeeper version:")
}

// state is what a ZooKeeper server says of itself ("srvr": version, mode,
// zxid, connections), for an error; "" for etcd or no answer.
func (s *server) state() string {
	if s.kind != "zookeeper" && s.kind != "zk" {
		return ""
	}
	c, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return ""
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("srvr")); err != nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(c, 4096))
	return string(b)
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// pid is the server's process id (for its CPU and memory).
func (s *server) pid() int { return s.cmd.Process.Pid }

// stop kills the server's process group and removes its data.
func (s *server) stop() {
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
	}
	os.RemoveAll(s.dir)
}
