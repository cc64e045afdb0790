package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Stores the lab can run the controller on. The store always runs inside
// the controller's namespace, where muxes and `beamer ctl` reach it.
var Stores = []string{"embedded", "etcd", "zookeeper"}

// startController starts the store (unless embedded) and the controller,
// and waits until `beamer ctl` gets answers.
func (l *Lab) startController(ctx context.Context) error {
	dir := filepath.Join(l.opts.Dir, "store")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if l.opts.ControlHosts > 1 {
		return l.startControlHosts(ctx, dir) // controlhosts.go
	}
	ctlStore := ""
	switch l.opts.Store {
	case "", "embedded":
		// The controller embeds etcd; muxes talk to it as to any etcd
		// server (ctl calls the controller's API).
		ctlStore = fmt.Sprintf("embed://%s?client=%s:2379&peer=%s:2380", dir, ctlAddr, ctlAddr)
		l.store = fmt.Sprintf("etcd://%s:2379", ctlAddr)
	case "etcd":
		if err := l.startEtcd(dir); err != nil {
			return err
		}
		l.store = fmt.Sprintf("etcd://%s:2379", ctlAddr)
		ctlStore = l.store
	case "zookeeper":
		if err := l.startZooKeeper(dir); err != nil {
			return err
		}
		l.store = fmt.Sprintf("zk://%s:2181", ctlAddr)
		ctlStore = l.store
	default:
		return fmt.Errorf("lab: store %q: want one of %s", l.opts.Store, strings.Join(Stores, ", "))
	}
	args, err := l.controllerArgs()
	if err != nil {
		return err
	}
	p, err := startProgram(l.ctl, l.opts.Dir, "controller", l.opts.Beamer, l.storeArgs(ctlStore, args...)...)
	if err != nil {
		return err
	}
	l.procs.add(p)
	return l.waitCtl(ctx, p)
}

// controllerArgs are the arguments of every controller the lab runs.
func (l *Lab) controllerArgs() ([]string, error) {
	args := []string{"controller", "--health-interval", "500ms", "--reconcile-every", "5s"}
	if d := l.opts.HoldInterval; d > 0 {
		args = append(args, "--hold-interval", d.String(), "--metrics", metricsAddr)
	}
	if l.opts.EvictOldest {
		args = append(args, "--history-evict-oldest")
	}
	if l.prismKeepAlive = hasFlag(l.opts.Beamer, "controller", "--prism-muxes-file"); l.prismKeepAlive {
		if err := l.writePrismMuxes(); err != nil {
			return nil, err
		}
		args = append(args, prismControllerArgs(l.prismMuxFile())...)
	}
	tlsArgs, err := l.controllerTLSArgs() // nodetls.go
	if err != nil {
		return nil, err
	}
	return append(args, tlsArgs...), nil
}

// waitCtl waits until `beamer ctl` gets answers, or p exits.
func (l *Lab) waitCtl(ctx context.Context, p *process) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := l.Ctl("list"); err == nil {
			return nil
		}
		if err := p.exited(); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return errors.New("controller not ready after 60 s")
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// startEtcd runs Debian's etcd server in the controller namespace.
func (l *Lab) startEtcd(dir string) error {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return errors.New("--store etcd needs the etcd server (Debian package etcd-server)")
	}
	client, peer := fmt.Sprintf("http://%s:2379", ctlAddr), fmt.Sprintf("http://%s:2380", ctlAddr)
	p, err := startProgram(l.ctl, l.opts.Dir, "etcd", bin, "--name", "lab", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "lab="+peer, "--log-level", "warn")
	if err != nil {
		return err
	}
	l.procs.add(p)
	return nil
}

// zkServerScript is where Debian's zookeeper package installs the launcher.
const zkServerScript = "/usr/share/zookeeper/bin/zkServer.sh"

// startZooKeeper runs Debian's ZooKeeper (the paper's store) in the
// controller namespace.
func (l *Lab) startZooKeeper(dir string) error {
	if _, err := os.Stat(zkServerScript); err != nil {
		return errors.New("--store zookeeper needs ZooKeeper (Debian package zookeeper)")
	}
	cfg := strings.Join([]string{"tickTime=500", "initLimit=10", "syncLimit=5",
		"dataDir=" + filepath.Join(dir, "zk"), "clientPort=2181", "clientPortAddress=" + ctlAddr.String(),
		"admin.enableServer=false", "maxClientCnxns=0", ""}, "\n")
	path := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return err
	}
	cmd := l.ctl.Command(zkServerScript, "start-foreground", path)
	p, err := startCmd(cmd, l.opts.Dir, "zookeeper",
		"ZOO_LOG_DIR="+dir, "JVMFLAGS=-Xmx256m -XX:+UseSerialGC", "ZOO_LOG4J_PROP=WARN,CONSOLE")
	if err != nil {
		return err
	}
	l.procs.add(p)
	return nil
}

// Ctl runs `beamer ctl args…` in the controller's namespace: it calls the
// controller's management API on loopback (its default --api), as an
// operator on the controller's host does; a binary from before the API
// is given the store.
func (l *Lab) Ctl(args ...string) (string, error) {
	if len(l.ctls) > 1 {
		return l.ctlControlHosts(args...) // controlhosts.go
	}
	if !l.ctlAPI {
		args = l.storeArgs(l.store, args...)
	}
	out, err := l.ctl.Run(l.opts.Beamer, append([]string{"ctl"}, args...)...)
	return strings.TrimSpace(out), err
}

// storeArgs are args with the store flag. The store is plaintext on the
// lab's fabric, a network of namespaces nothing else reaches, so a beamer
// that refuses plaintext stores off loopback is told --insecure.
func (l *Lab) storeArgs(url string, args ...string) []string {
	args = append(args, "--store", url)
	if l.insecureFlag {
		args = append(args, "--insecure")
	}
	return args
}

// agentAPIPort is where agents serve the agent API (the instance's
// agent_port default).
const agentAPIPort = 9300

// hasFlag reports whether `beamer COMMAND --help` lists flag: the lab
// drives binaries with and without newer daemon features.
func hasFlag(beamer, command, flag string) bool {
	out, _ := exec.Command(beamer, command, "--help").CombinedOutput()
	return strings.Contains(string(out), flag+" ")
}
