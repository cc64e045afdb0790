package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/netlab"
	"github.com/cilium/ebpf/link"
)

// Addresses of the lab, all in 198.18.0.0/15 (reserved for benchmarking).
var (
	VIP          = netip.MustParseAddr("198.18.100.1")
	fabricPrefix = 24
	ctlAddr      = netip.MustParseAddr("198.18.0.250")
	trusted      = netip.MustParsePrefix("198.18.0.0/24")
)

func muxAddr(i int) netip.Addr    { return netip.AddrFrom4([4]byte{198, 18, 0, byte(1 + i)}) }
func serverAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(10 + i)}) }
func clientAddr(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(100 + i)}) }

// ServerID is the server id of server i.
func ServerID(i int) int { return 1025 + i }

// Options shape a lab.
type Options struct {
	Beamer   string        // path of the beamer binary the daemons run
	Dir      string        // run directory: store data, logs
	Servers  int           // server namespaces (started as needed by the scenario)
	Clients  int           // client namespaces
	Buckets  uint32        // B of the instance
	Window   time.Duration // chaining window
	FileSize int           // bytes of the file clients download
	Strategy string        // beamer or maglev
}

// Lab is a running lab.
type Lab struct {
	opts    Options
	net     *netlab.Lab
	fabric  *netlab.Namespace
	ctl     *netlab.Namespace
	mux     *netlab.Namespace
	servers []*netlab.Namespace
	clients []*netlab.Namespace
	procs   processes
	http    []*fileServer
	links   []link.Link // BPF links the lab holds (closing one detaches it)
	store   string
}

const fabricMTU = 1600 // room for the 36 bytes of encapsulation

// Start builds the network and starts the controller.
func Start(ctx context.Context, opts Options) (l *Lab, err error) {
	if opts.Beamer == "" {
		if opts.Beamer, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	n, err := netlab.New("lab")
	if err != nil {
		return nil, err
	}
	l = &Lab{opts: opts, net: n}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	if l.fabric, err = n.Namespace("fabric"); err != nil {
		return nil, err
	}
	var ports []string
	attach := func(name string, addr netip.Addr, mtu int) (*netlab.Namespace, error) {
		ns, err := n.Namespace(name)
		if err != nil {
			return nil, err
		}
		if err := n.Veth(ns, "eth0", netip.PrefixFrom(addr, fabricPrefix), l.fabric, "p-"+name, netip.Prefix{}, mtu); err != nil {
			return nil, err
		}
		ports = append(ports, "p-"+name)
		return ns, nil
	}
	if l.ctl, err = attach("ctl", ctlAddr, 0); err != nil {
		return nil, err
	}
	if l.mux, err = attach("mux0", muxAddr(0), fabricMTU); err != nil {
		return nil, err
	}
	for i := 0; i < opts.Servers; i++ {
		s, err := attach(fmt.Sprintf("srv%d", i), serverAddr(i), fabricMTU)
		if err != nil {
			return nil, err
		}
		l.servers = append(l.servers, s)
	}
	for i := 0; i < opts.Clients; i++ {
		c, err := attach(fmt.Sprintf("cli%d", i), clientAddr(i), 0)
		if err != nil {
			return nil, err
		}
		// Encapsulation happens after the client computed its checksums:
		// they must be complete, not left to offload.
		if err := c.DisableTxChecksum("eth0"); err != nil {
			return nil, err
		}
		if _, err := c.Run("ip", "route", "add", VIP.String()+"/32", "via", muxAddr(0).String()); err != nil {
			return nil, err
		}
		if _, err := c.Run("ip", "mptcp", "limits", "set", "add_addr_accepted", "1", "subflows", "2"); err != nil {
			return nil, err
		}
		l.clients = append(l.clients, c)
	}
	if err := l.fabric.Bridge("br0", ports...); err != nil {
		return nil, err
	}
	// The mux's XDP_TX frames reach the fabric only if its veth peer runs XDP.
	pass, err := l.fabric.AttachXDPPass("p-mux0")
	if err != nil {
		return nil, err
	}
	l.links = append(l.links, pass)
	return l, l.startController(ctx)
}

func (l *Lab) startController(ctx context.Context) error {
	dir := filepath.Join(l.opts.Dir, "store")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	l.store = fmt.Sprintf("embed://%s?client=%s:2379&peer=%s:2380", dir, ctlAddr, ctlAddr)
	p, err := start(l.ctl, l.opts.Dir, "controller", l.opts.Beamer, "controller", "--store", l.store,
		"--health-interval", "500ms", "--reconcile-every", "5s")
	if err != nil {
		return err
	}
	l.procs.add(p)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := l.Ctl("list"); err == nil {
			return nil
		}
		if err := p.exited(); err != nil {
			return err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return errors.New("controller not ready after 60 s")
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// Ctl runs `beamer ctl args…` against the lab's store.
func (l *Lab) Ctl(args ...string) (string, error) {
	out, err := l.ctl.Run(l.opts.Beamer, append(append([]string{"ctl"}, args...), "--store", l.clientStore())...)
	return strings.TrimSpace(out), err
}

// clientStore is how muxes and `beamer ctl` reach the controller's embedded
// etcd: as an etcd server at the controller's address. (An embed:// URL would
// start a second embedded etcd when the controller's is not up yet.)
func (l *Lab) clientStore() string { return fmt.Sprintf("etcd://%s:2379", ctlAddr) }

// StartMux starts the mux daemon following the instance.
func (l *Lab) StartMux(instance string) error {
	p, err := start(l.mux, l.opts.Dir, "mux0", l.opts.Beamer, "mux", "--store", l.clientStore(), "--instance", instance, "--iface", "eth0")
	if err != nil {
		return err
	}
	l.procs.add(p)
	return waitFor(10*time.Second, p, func() bool {
		out, _ := l.mux.Run("ip", "link", "show", "eth0")
		return strings.Contains(out, "xdp")
	})
}

// StartServer starts server i: its agent and its HTTP file server.
func (l *Lab) StartServer(i int) error {
	s := l.servers[i]
	window := l.opts.Window
	if l.opts.Strategy == "maglev" {
		window = 0
	}
	p, err := start(s, l.opts.Dir, fmt.Sprintf("agent%d", i), l.opts.Beamer, "agent", "--iface", "eth0",
		"--id", fmt.Sprint(ServerID(i)), "--vip", fmt.Sprintf("%s:%d:%s", VIP, l.opts.Buckets, window), "--trusted", trusted.String())
	if err != nil {
		return err
	}
	l.procs.add(p)
	if err := waitFor(10*time.Second, p, func() bool {
		out, _ := s.Run("ip", "addr", "show", "lo")
		return strings.Contains(out, VIP.String())
	}); err != nil {
		return err
	}
	fs, err := serveFiles(s, fmt.Sprintf("srv%d", i), l.opts.FileSize)
	if err != nil {
		return err
	}
	l.http = append(l.http, fs)
	return nil
}

func waitFor(d time.Duration, p *process, ok func() bool) error {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := p.exited(); err != nil {
			return err
		}
		if ok() {
			return nil
		}
	}
	return fmt.Errorf("%s not ready after %v (log: %s)", p.name, d, p.log)
}

// Close stops every process and removes every namespace.
func (l *Lab) Close() error {
	for _, fs := range l.http {
		fs.close()
	}
	l.procs.stopAll()
	for _, k := range l.links {
		k.Close()
	}
	return l.net.Close()
}
