package lab

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/node/agentd"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/cilium/ebpf/link"
)

// Options shape a lab.
type Options struct {
	Beamer string // path of the beamer binary the daemons run (default: this executable)
	// MuxBinary is the binary whose `mux` command the muxes run (default:
	// Beamer): beamer-lab, whose mux is the product's with an experiment's
	// fault around it (--awfd-drop), for the runs that need one.
	MuxBinary string
	Dir       string        // run directory: store data, router files, logs
	Clients   int           // client namespaces, each with two paths to the router
	Muxes     int           // mux namespaces (started as the scenario says)
	Servers   int           // server namespaces (started as the scenario says)
	Buckets   uint32        // B of the instance
	Window    time.Duration // chaining window of the beamer strategy
	FileSize  int           // bytes of the file servers serve
	Strategy  string        // a registered strategy (strategy.go)
	Store     string        // embedded (default), etcd or zookeeper: the store the controller runs on
	Seed      int64         // seeds the router's ECMP hash and the clients' ports
	BGPHold   time.Duration // BGP hold time between muxes and router (default 3 s)
	BindVIP   bool          // servers' HTTP service listens only on VIP:80 (DSR style)
	UDP       bool          // the instance offers UDP 53 and servers answer it (udp.go)
	QUIC      bool          // the instance offers QUIC on UDP 443, routed by CID (quic.go)
	Encap     string        // the instance's encapsulation: "" (ipip) or gue (encap.go)
	// ServerRates, when set, shapes server i's link to ServerRates[i]
	// bits/s (tbf on its interface; cycled if shorter than Servers): servers
	// of unequal capacity for the AWFD experiment (awfd_experiment.go).
	ServerRates []float64
	// CreateArgs are added to `ctl create` (a strategy's options, e.g.
	// --classes 4 --poll 250ms); MuxArgs to every `beamer mux`.
	CreateArgs []string
	MuxArgs    []string
	// Family 6 makes the service IPv6 (family.go): VIP, servers, GUE over
	// IPv6 and the clients' traffic; 0 or 4 is the IPv4 lab.
	Family int
	// HoldInterval, if set, is the controller's --hold-interval, and the
	// controller serves metrics on metricsAddr; EvictOldest runs it with
	// --history-evict-oldest (heir.go).
	HoldInterval time.Duration
	EvictOldest  bool
	// ControlHosts, if 3, runs that many controller hosts, each a
	// store member and a controller (controlhosts.go): the embedded store
	// as a replicated etcd cluster, or a ZooKeeper ensemble. 0 or 1: one
	// controller host, as before.
	ControlHosts int
	// ControlHostDisks puts each controller host's store member's data
	// on an ext4 filesystem of its own, on a loop device, so that a rig
	// can make one member's disk fail (controldisks.go). Needs root and
	// loop devices (RequireLoopDevices).
	ControlHostDisks bool
	// ControllerArgs are added to the controller hosts' controllers'
	// arguments (e.g. --log-level debug).
	ControllerArgs []string
}

// Instance is the name of the lab's one load-balanced service.
const Instance = "web"

// Lab is a running lab.
type Lab struct {
	opts    Options
	net     *netlab.Lab
	fabric  *netlab.Namespace
	ctl     *netlab.Namespace
	ctls    []*netlab.Namespace // the controller hosts, ctl first (controlhosts.go)
	ctlHost []*controlHost
	ctlDir  string         // the controller hosts' data directories' parent
	disks   []*controlDisk // the controller hosts' own filesystems, if any (controldisks.go)
	// disksShared is the directory bind-mounted shared above them.
	disksShared string
	router      *netlab.Namespace
	muxes       []*muxNode
	servers     []*serverNode
	clients     []*netlab.Namespace
	procs       processes
	links       []link.Link // BPF links the lab holds (closing one detaches it)
	store       string      // how muxes and ctl reach the store
	// agentAPI: the beamer binary's agent serves the agent API (--api),
	// through which the controller checks health and connections.
	agentAPI bool
	// agentCapacity: the agent takes --capacity-bps (AWFD capacity reports).
	agentCapacity bool
	// insecureFlag: the binary's store commands take --insecure (and
	// refuse a plaintext store off loopback without it).
	insecureFlag bool
	// ctlAPI: the binary's ctl calls the controller's management API
	// (pkg/controlplane/mgmtapi) instead of the store.
	ctlAPI bool
	// prismKeepAlive: the controller prunes Prism MCT entries from the
	// muxes' keep-alive bits, reading the list of muxes the lab keeps
	// (prism.go); prismExtraMuxes are listed too (a test's unreachable mux).
	prismKeepAlive  bool
	prismExtraMuxes []string
	// nodeTLS: the binary's node APIs take certificates (nodetls.go);
	// certMu serializes store-certs.sh runs (one CA, one serial file).
	nodeTLS bool
	certMu  sync.Mutex
	seen    Inventory // everything the lab made, to prove it is gone after Close

	closeOnce sync.Once
}

const fabricMTU = 1600 // room for the 36 bytes of encapsulation

// Start builds the network, the border router and the controller. Muxes
// and servers start as the scenario says.
func Start(ctx context.Context, opts Options) (l *Lab, err error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.Beamer == "" {
		if opts.Beamer, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if opts.BGPHold == 0 {
		opts.BGPHold = 3 * time.Second
	}
	n, err := netlab.New("lab")
	if err != nil {
		return nil, err
	}
	l = &Lab{opts: opts, net: n, agentAPI: hasFlag(opts.Beamer, "agent", "--api"), agentCapacity: hasFlag(opts.Beamer, "agent", "--capacity-bps"),
		insecureFlag: hasFlag(opts.Beamer, "controller", "--insecure"), nodeTLS: hasFlag(opts.Beamer, "agent", "--api-cert"),
		ctlAPI: hasFlag(opts.Beamer, "controller", "--api-advertise")}
	built := l // `return nil, err` clears l before this runs
	defer func() {
		if err != nil {
			built.Close()
		}
	}()
	if err := l.buildFabric(); err != nil {
		return nil, err
	}
	if err := l.buildClients(); err != nil {
		return nil, err
	}
	for _, ns := range l.allNamespaces() {
		l.seen.addNamespace(ns)
	}
	if err := l.startRouter(ctx); err != nil {
		return nil, err
	}
	return l, l.startController(ctx)
}

func (o *Options) validate() error {
	switch {
	case o.Clients < 1 || o.Clients > MaxClients:
		return fmt.Errorf("lab: %d clients: want 1–%d", o.Clients, MaxClients)
	case o.Muxes < 1 || o.Muxes > MaxMuxes:
		return fmt.Errorf("lab: %d muxes: want 1–%d", o.Muxes, MaxMuxes)
	case o.Servers < 1 || o.Servers > MaxServers:
		return fmt.Errorf("lab: %d servers: want 1–%d", o.Servers, MaxServers)
	case o.Buckets <= uint32(o.Servers):
		return fmt.Errorf("lab: %d buckets: need more buckets than servers (%d)", o.Buckets, o.Servers)
	case o.FileSize < 1:
		return errors.New("lab: the file must have at least one byte")
	case CheckStrategies([]string{o.Strategy}) != nil:
		return fmt.Errorf("lab: %v", CheckStrategies([]string{o.Strategy}))
	case o.Dir == "":
		return errors.New("lab: no run directory")
	case o.ControlHosts < 0 || o.ControlHosts > MaxControlHosts || o.ControlHosts > 1 && o.ControlHosts%2 == 0:
		return fmt.Errorf("lab: %d controller hosts: want 1 or 3", o.ControlHosts)
	}
	return o.checkFamily()
}

// buildFabric makes the layer-2 fabric (a bridge) joining the router, the
// controller, the muxes and the servers.
func (l *Lab) buildFabric() (err error) {
	n := l.net
	if l.fabric, err = n.Namespace("fabric"); err != nil {
		return err
	}
	var ports []string
	mtu := fabricMTU
	if l.v6() {
		mtu = fabricMTU6
	}
	attach := func(name string, addr, addr6 netip.Addr, mtu int) (*netlab.Namespace, error) {
		ns, err := n.Namespace(name)
		if err != nil {
			return nil, err
		}
		if err := n.Veth(ns, "eth0", netip.PrefixFrom(addr, fabricNet.Bits()), l.fabric, "p-"+name, netip.Prefix{}, mtu); err != nil {
			return nil, err
		}
		if l.v6() {
			if err := ns.AddAddr("eth0", netip.PrefixFrom(addr6, fabricNet6.Bits())); err != nil {
				return nil, err
			}
		}
		ports = append(ports, "p-"+name)
		return ns, nil
	}
	if l.ctl, err = attach("ctl", ctlAddr, ctlAddr6, 0); err != nil {
		return err
	}
	l.ctls = []*netlab.Namespace{l.ctl}
	for i := 1; i < l.opts.ControlHosts; i++ {
		ns, err := attach(fmt.Sprintf("ctl%d", i), controlHostAddr(i), controlHostAddr6(i), 0)
		if err != nil {
			return err
		}
		l.ctls = append(l.ctls, ns)
	}
	if l.router, err = attach("router", routerFabric, routerFabric6, mtu); err != nil {
		return err
	}
	for i := 0; i < l.opts.Muxes; i++ {
		ns, err := attach(fmt.Sprintf("mux%d", i), muxAddr(i), muxAddr6(i), mtu)
		if err != nil {
			return err
		}
		l.muxes = append(l.muxes, &muxNode{ns: ns})
	}
	for i := 0; i < l.opts.Servers; i++ {
		ns, err := attach(fmt.Sprintf("srv%d", i), serverAddr(i), serverAddr6(i), mtu)
		if err != nil {
			return err
		}
		// Replies go straight to the clients (DSR), through the router.
		if _, err := ns.Run("ip", "route", "add", LabRange.String(), "via", routerFabric.String()); err != nil {
			return err
		}
		if l.v6() {
			if _, err := ns.Run("ip", "-6", "route", "add", labRange6.String(), "via", routerFabric6.String()); err != nil {
				return err
			}
		}
		l.servers = append(l.servers, &serverNode{ns: ns})
	}
	if err := l.fabric.Bridge("br0", ports...); err != nil {
		return err
	}
	// A mux's XDP_TX frames reach the fabric only if its veth peer runs XDP.
	for i := range l.muxes {
		pass, err := l.fabric.AttachXDPPass(fmt.Sprintf("p-mux%d", i))
		if err != nil {
			return err
		}
		l.links = append(l.links, pass)
	}
	return nil
}

// buildClients gives every client two paths to the router, one on each
// client network (a bridge inside the router namespace).
func (l *Lab) buildClients() error {
	for p := 0; p < paths; p++ {
		if err := l.router.Bridge(fmt.Sprintf("cbr%d", p)); err != nil {
			return err
		}
		if err := l.router.AddAddr(fmt.Sprintf("cbr%d", p), netip.PrefixFrom(routerClientAddr(p), 24)); err != nil {
			return err
		}
		if l.v6() {
			if err := l.router.AddAddr(fmt.Sprintf("cbr%d", p), netip.PrefixFrom(routerClientAddr6(p), 64)); err != nil {
				return err
			}
		}
	}
	for i := 0; i < l.opts.Clients; i++ {
		c, err := l.net.Namespace(fmt.Sprintf("cli%d", i))
		if err != nil {
			return err
		}
		for p := 0; p < paths; p++ {
			dev, port := fmt.Sprintf("eth%d", p), fmt.Sprintf("c%dp%d", i, p)
			if err := l.net.Veth(c, dev, netip.PrefixFrom(clientAddr(p, i), 24), l.router, port, netip.Prefix{}, 0); err != nil {
				return err
			}
			if _, err := l.router.Run("ip", "link", "set", port, "master", fmt.Sprintf("cbr%d", p)); err != nil {
				return err
			}
			if l.v6() {
				if err := c.AddAddr(dev, netip.PrefixFrom(clientAddr6(p, i), 64)); err != nil {
					return err
				}
			}
			// Packets an XDP program forwards keep the checksums the client
			// left to offload unfilled: clients must compute them.
			if err := c.DisableTxChecksum(dev); err != nil {
				return err
			}
		}
		if err := setupClient(c, i, l.v6()); err != nil {
			return err
		}
		l.clients = append(l.clients, c)
	}
	return nil
}

// setupClient routes through the router on both paths and prepares MPTCP:
// the second path is a fullmesh endpoint, used for the subflow the client
// opens when a server announces VIP:server-id. An IPv6 lab's clients get
// the same in IPv6 (their MPTCP endpoint is the IPv6 one then: a subflow
// joins in the family of its connection).
func setupClient(c *netlab.Namespace, i int, v6 bool) error {
	second := clientAddr(1, i).String()
	cmds := [][]string{
		{"ip", "route", "add", "default", "via", routerClientAddr(0).String()},
		{"ip", "rule", "add", "from", second, "table", "100"},
		{"ip", "route", "add", "default", "via", routerClientAddr(1).String(), "dev", "eth1", "table", "100"},
		{"ip", "mptcp", "limits", "set", "add_addr_accepted", "2", "subflows", "4"},
	}
	if v6 {
		second6 := clientAddr6(1, i).String()
		cmds = append(cmds,
			[]string{"ip", "-6", "route", "add", "default", "via", routerClientAddr6(0).String()},
			[]string{"ip", "-6", "rule", "add", "from", second6, "table", "100"},
			[]string{"ip", "-6", "route", "add", "default", "via", routerClientAddr6(1).String(), "dev", "eth1", "table", "100"},
			[]string{"ip", "mptcp", "endpoint", "add", second6, "dev", "eth1", "fullmesh"})
	} else {
		cmds = append(cmds, []string{"ip", "mptcp", "endpoint", "add", second, "dev", "eth1", "fullmesh"})
	}
	for _, cmd := range cmds {
		if _, err := c.Run(cmd[0], cmd[1:]...); err != nil {
			return err
		}
	}
	for k, v := range map[string]string{
		// Keep a flow's hash (and so its mux) across retransmission
		// timeouts: a redrawn hash would move it, a false "broken".
		"net.core.txrehash": "0",
		// Kernel-chosen ports (MPTCP subflows) stay clear of the
		// seeded ports the load generator binds.
		"net.ipv4.ip_local_port_range": "60000 65000",
		// Short-lived connections close from the client side; their
		// ports come round again within TIME_WAIT in long runs.
		"net.ipv4.tcp_tw_reuse": "1",
	} {
		if err := c.Sysctl(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (l *Lab) allNamespaces() []*netlab.Namespace {
	out := append([]*netlab.Namespace{l.fabric, l.router}, l.ctls...)
	for _, m := range l.muxes {
		out = append(out, m.ns)
	}
	for _, s := range l.servers {
		out = append(out, s.ns)
	}
	return append(out, l.clients...)
}

// Close stops every process and removes every namespace. Safe to call
// more than once and from a signal path.
func (l *Lab) Close() error {
	var err error
	l.closeOnce.Do(func() {
		for _, s := range l.servers {
			if s.http != nil {
				s.http.close()
				s.udp.close()
				s.quic.close()
			}
		}
		l.procs.stopAll()
		if derr := l.releaseDisks(); derr != nil {
			err = derr
		}
		// A stopped agent leaves its programs pinned and its node set up
		// for the next agent (a hitless restart); the lab is done with
		// them, so it uninstalls each, as `beamer agent cleanup` would.
		for _, s := range l.servers {
			if s.agent != nil {
				s.ns.Do(func() error { return agentd.Cleanup("eth0", agentd.Options{}) })
			}
		}
		for _, k := range l.links {
			k.Close()
		}
		err = errors.Join(err, l.net.Close())
	})
	return err
}

// Inventory is what the lab made so far: after Close, none of it may remain.
func (l *Lab) Inventory() *Inventory { return l.seen.snapshot(l.procs.started()) }
