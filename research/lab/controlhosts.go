package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
)

// Controller hosts: with Options.ControlHosts 3 (or 5) the lab runs that
// many hosts ctl, ctl1, ctl2… on the fabric, each a store member and a
// controller, as docs/control-plane.md "Three controller hosts on the
// embedded store" sets them up (there with mutual TLS; here plaintext on
// the lab's closed fabric, with --insecure): the embedded store forms a
// replicated etcd cluster; with Store zookeeper each host runs one server
// of a ZooKeeper ensemble and a controller on it. Muxes list every
// member; `beamer ctl` runs on the router's namespace (an operator's
// machine, not a controller host, so cutting a host does not cut the
// operator) and lists every controller's API. Fault rigs
// (research/faults/partition) cut, kill and pause hosts through the
// methods below.

// MaxControlHosts bounds Options.ControlHosts (addresses .250–.254 minus
// the router's).
const MaxControlHosts = 3

// controlHostAddr is controller host i's fabric address (ctl, host 0, is
// ctlAddr).
func controlHostAddr(i int) netip.Addr  { return netip.AddrFrom4([4]byte{198, 18, 0, byte(250 + i)}) }
func controlHostAddr6(i int) netip.Addr { return addr6(0, 0xfa+i) }

// Ports of a controller host.
const (
	memberClientPort = 2379
	memberPeerPort   = 2380
	zkClientPort     = 2181
	ctlAPIPort       = 9400
)

// controlHost is one controller host's processes.
type controlHost struct {
	ns       *netlab.Namespace
	args     []string // the controller's, to restart it as it was
	ctl      *process
	zk       *process // the ZooKeeper server, with Store zookeeper
	disk     *controlDisk
	restarts int
}

// startControlHosts starts the store members and the controllers on
// every controller host and waits until `beamer ctl` gets answers.
func (l *Lab) startControlHosts(ctx context.Context, dir string) error {
	base, err := l.controllerArgs()
	if err != nil {
		return err
	}
	n := len(l.ctls)
	l.ctlDir = dir
	if l.opts.ControlHostDisks {
		if err := shareDir(dir); err != nil {
			return fmt.Errorf("lab: controller host disks: %w", err)
		}
		l.disksShared = dir
		l.seen.addMount(dir)
		for i := range n {
			name := fmt.Sprintf("h%d", i) // the embedded member's data directory
			if l.opts.Store == "zookeeper" {
				name = fmt.Sprintf("zk%d", i)
			}
			d, err := newControlDisk(dir, name+"-disk", filepath.Join(dir, name))
			if err != nil {
				return fmt.Errorf("lab: controller host %d's disk: %w", i, err)
			}
			l.disks = append(l.disks, d)
			l.seen.addDisk(d)
		}
	}
	var members, initial, clients []string
	for i := range n {
		a := controlHostAddr(i)
		initial = append(initial, fmt.Sprintf("h%d=%s:%d", i, a, memberPeerPort))
		members = append(members, fmt.Sprintf("%s:%d", a, memberClientPort))
		clients = append(clients, fmt.Sprintf("%s:%d", a, zkClientPort))
	}
	for i, ns := range l.ctls {
		h := &controlHost{ns: ns}
		if l.opts.ControlHostDisks {
			h.disk = l.disks[i]
		}
		a := controlHostAddr(i)
		var url string
		switch l.opts.Store {
		case "", "embedded":
			url = fmt.Sprintf("embed://%s?name=h%d&client=%s:%d&peer=%s:%d&initial-cluster=%s",
				filepath.Join(dir, fmt.Sprintf("h%d", i)), i, a, memberClientPort, a, memberPeerPort, strings.Join(initial, ","))
			l.store = "etcd://" + strings.Join(members, ",")
		case "zookeeper":
			if h.zk, err = l.startEnsembleServer(dir, i, n, fmt.Sprintf("zookeeper%d", i)); err != nil {
				return err
			}
			l.procs.add(h.zk)
			l.store = "zk://" + strings.Join(clients, ",")
			url = l.store
		default:
			return fmt.Errorf("lab: %d controller hosts on store %q: want embedded or zookeeper", n, l.opts.Store)
		}
		args := append(append([]string(nil), base...), "--identity", fmt.Sprintf("ctl%d", i),
			"--api", fmt.Sprintf("%s:%d", a, ctlAPIPort))
		h.args = l.storeArgs(url, append(args, l.opts.ControllerArgs...)...)
		l.ctlHost = append(l.ctlHost, h)
	}
	// All at once: an embedded member is ready only once a majority runs.
	for i, h := range l.ctlHost {
		if h.ctl, err = startProgram(h.ns, l.opts.Dir, fmt.Sprintf("controller%d", i), l.opts.Beamer, h.args...); err != nil {
			return err
		}
		l.procs.add(h.ctl)
	}
	return l.waitCtl(ctx, l.ctlHost[0].ctl)
}

// startEnsembleServer starts server i (of n) of a ZooKeeper ensemble on
// controller host i, its output in the lab's directory as name.log.
func (l *Lab) startEnsembleServer(dir string, i, n int, name string) (*process, error) {
	if _, err := os.Stat(zkServerScript); err != nil {
		return nil, errors.New("--store zookeeper needs ZooKeeper (Debian package zookeeper)")
	}
	data := filepath.Join(dir, fmt.Sprintf("zk%d", i))
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintf("%d\n", i+1)), 0o600); err != nil {
		return nil, err
	}
	a := controlHostAddr(i)
	lines := []string{"tickTime=500", "initLimit=10", "syncLimit=5", "dataDir=" + data,
		fmt.Sprintf("clientPort=%d", zkClientPort), "clientPortAddress=" + a.String(),
		"admin.enableServer=false", "maxClientCnxns=0", "4lw.commands.whitelist=srvr,stat"}
	for j := range n {
		// Each server listens on its own address only (quorumListenOnAllIPs off).
		lines = append(lines, fmt.Sprintf("server.%d=%s:2888:3888", j+1, controlHostAddr(j)))
	}
	path := filepath.Join(data, "zoo.cfg")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	return startCmd(l.ctls[i].Command(zkServerScript, "start-foreground", path), l.opts.Dir, name,
		"ZOO_LOG_DIR="+data, "JVMFLAGS=-Xmx192m -XX:+UseSerialGC", "ZOO_LOG4J_PROP=WARN,CONSOLE")
}

// ctlControlHosts runs `beamer ctl args…` on the router's namespace,
// listing every controller's API (a standby forwards to the elected one).
func (l *Lab) ctlControlHosts(args ...string) (string, error) {
	var apis []string
	for i := range l.ctls {
		apis = append(apis, fmt.Sprintf("%s:%d", controlHostAddr(i), ctlAPIPort))
	}
	args = append(append([]string{"ctl"}, args...), "--api", strings.Join(apis, ","), "--insecure")
	out, err := l.router.Run(l.opts.Beamer, args...)
	return strings.TrimSpace(out), err
}

// ControlHosts is the number of controller hosts.
func (l *Lab) ControlHosts() int { return len(l.ctls) }

// ControlHost is controller host i's namespace.
func (l *Lab) ControlHost(i int) (*netlab.Namespace, error) {
	if i < 0 || i >= len(l.ctls) {
		return nil, fmt.Errorf("no controller host %d: the lab has 0–%d", i, len(l.ctls)-1)
	}
	return l.ctls[i], nil
}

// ControlHostAddr is controller host i's address on the fabric.
func ControlHostAddr(i int) netip.Addr { return controlHostAddr(i) }

// StoreURL is how muxes reach the store (every member listed).
func (l *Lab) StoreURL() string { return l.store }

func (l *Lab) controlHost(i int) (*controlHost, error) {
	if i < 0 || i >= len(l.ctlHost) {
		return nil, fmt.Errorf("no controller host %d (the lab has %d with their own controllers)", i, len(l.ctlHost))
	}
	return l.ctlHost[i], nil
}

// SignalController sends sig (SIGKILL, SIGSTOP, SIGCONT) to controller
// host i's controller; after SIGKILL it waits until the process is gone.
func (l *Lab) SignalController(i int, sig syscall.Signal) error {
	h, err := l.controlHost(i)
	if err != nil {
		return err
	}
	if h.ctl.exited() != nil {
		return fmt.Errorf("controller %d is not running", i)
	}
	if err := syscall.Kill(h.ctl.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("controller %d: %w", i, err)
	}
	if sig == syscall.SIGKILL {
		select {
		case <-h.ctl.done:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("controller %d survived SIGKILL for 10 s", i)
		}
	}
	return nil
}

// RestartController starts controller host i's controller again, as it
// was started (its member's data directory kept), after it was killed.
func (l *Lab) RestartController(i int) error {
	h, err := l.controlHost(i)
	if err != nil {
		return err
	}
	if h.ctl.exited() == nil {
		return fmt.Errorf("controller %d is still running", i)
	}
	h.restarts++
	p, err := startProgram(h.ns, l.opts.Dir, fmt.Sprintf("controller%d-%d", i, h.restarts), l.opts.Beamer, h.args...)
	if err != nil {
		return err
	}
	l.procs.add(p)
	h.ctl = p
	return nil
}

// ControllerRunning reports whether controller host i's controller runs
// (SIGSTOPped counts as running).
func (l *Lab) ControllerRunning(i int) bool {
	h, err := l.controlHost(i)
	return err == nil && h.ctl.exited() == nil
}

// MuxLog is the path of mux i's log (its current run's).
func (l *Lab) MuxLog(i int) (string, error) {
	m, err := l.mux(i)
	if err != nil {
		return "", err
	}
	if m.proc == nil {
		return "", fmt.Errorf("mux %d was never started", i)
	}
	return m.proc.log, nil
}

// ServerDIP is server i's address, as `ctl add-dip` names it.
func (l *Lab) ServerDIP(i int) netip.Addr { return l.dip(i) }
