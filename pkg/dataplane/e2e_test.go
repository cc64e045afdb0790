package dataplane

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
)

// The end-to-end network: one layer-2 fabric (a bridge) joining a client, a
// mux and two servers. The client reaches the VIP through the mux; servers
// answer the client directly (DSR).
var (
	e2eVIP    = netip.MustParseAddr("198.18.100.1")
	e2eClient = netip.MustParseAddr("198.18.0.100")
	e2eMux    = netip.MustParseAddr("198.18.0.1")
	e2eServer = map[string]netip.Addr{"a": netip.MustParseAddr("198.18.0.10"), "b": netip.MustParseAddr("198.18.0.11"),
		"c": netip.MustParseAddr("198.18.0.12")}
	e2eID = map[string]forwarding.ServerID{"a": 1025, "b": 1026, "c": 1027}
)

const e2eBuckets = 67 // prime, as a Maglev table needs

// answerWithin is how long an end-to-end test waits for an answer that
// must come (see netlabtest.AnswerWithin). Tests that expect silence pass
// their own short deadline.
const answerWithin = netlabtest.AnswerWithin

type e2eNet struct {
	rig     *netlabtest.Rig
	fabric  *netlab.Namespace // the bridge br0 joining everyone
	client  *netlab.Namespace
	mux     *Mux   // the mux the client's route uses first
	muxes   []*Mux // all muxes, mux i at 198.18.0.(1+i)
	servers map[string]*netlab.Namespace
	agents  map[string]*Agent
	muxNS   *netlab.Namespace // the first mux's (set by newE2E6)
	gen     uint32
	table   *forwarding.Table
}

// e2eConfig shapes the network: the strategy of the instance, how many
// muxes, and the table the muxes start with.
type e2eConfig struct {
	strategy forwarding.Strategy
	muxes    int
	table    func() *forwarding.Table
	servers  []string // of e2eServer; nil: a and b
	cheetah  *forwarding.CheetahOptions
	// instance adjusts the instance the muxes load (services, QUIC, ...).
	instance func(*forwarding.Instance)
}

func muxAddrN(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(1 + i)}) }

func allToA() *forwarding.Table {
	table := forwarding.NewTable(e2eBuckets)
	for _, name := range []string{"a", "b"} {
		table.Servers[e2eID[name]] = forwarding.Server{Addr: e2eServer[name], State: forwarding.Active}
	}
	for i := range table.Buckets {
		table.Buckets[i] = forwarding.Bucket{Current: e2eID["a"]}
	}
	return table
}

func newE2E(t *testing.T) *e2eNet {
	return newE2EWith(t, e2eConfig{strategy: forwarding.StrategyBeamer, muxes: 1, table: allToA})
}

func newE2EWith(t *testing.T, cfg e2eConfig) *e2eNet {
	if cfg.servers == nil {
		cfg.servers = []string{"a", "b"}
	}
	// Encapsulation adds up to 60 bytes: links that carry it get a larger MTU.
	layout := netlabtest.DSRLayout{VIP: e2eVIP, Client: netip.PrefixFrom(e2eClient, 24), MTU: 1600}
	var serverAddrs []netip.Addr
	for _, name := range cfg.servers {
		serverAddrs = append(serverAddrs, e2eServer[name])
		layout.Servers = append(layout.Servers, netip.PrefixFrom(e2eServer[name], 24))
	}
	for i := 0; i < cfg.muxes; i++ {
		layout.Muxes = append(layout.Muxes, netip.PrefixFrom(muxAddrN(i), 24))
	}
	rig := netlabtest.NewRig(t, "e2e")
	d := rig.DSR(layout)
	e := &e2eNet{rig: rig, fabric: rig.Fabric(), client: d.Client, servers: map[string]*netlab.Namespace{}, agents: map[string]*Agent{}, gen: 1}
	for i, name := range cfg.servers {
		e.servers[name] = d.Servers[i]
	}
	muxNS := d.Muxes
	links := []link.Link{}
	t.Cleanup(func() {
		for _, l := range links {
			l.Close()
		}
	})
	hold := func(l link.Link, err error) {
		t.Helper()
		must(t, err)
		links = append(links, l)
	}
	_, err := e.client.Run("ip", "mptcp", "limits", "set", "add_addr_accepted", "1", "subflows", "2")
	must(t, err)

	// The muxes: one instance with the configured table.
	window := 4 * time.Minute
	if cfg.strategy == forwarding.StrategyMaglev {
		window = 0
	}
	e.table = cfg.table()
	e.table.Generation = e.gen
	for i, mns := range muxNS {
		must(t, mns.Sysctl("net.ipv4.ip_forward", "1"))
		m, err := LoadMux(MuxOptions{Addr: muxAddrN(i), ConnTrackEntries: 4096})
		must(t, err)
		t.Cleanup(func() { m.Close() })
		e.muxes = append(e.muxes, m)
		must(t, mns.Do(func() error { l, err := m.Attach("eth0", XDPDriver); hold(l, err); return nil }))
		in := forwarding.Instance{Name: "web", Strategy: cfg.strategy, VIPs: []netip.Addr{e2eVIP},
			PortLow: 80, PortHigh: 80, Buckets: e2eBuckets, ChainWindow: window, Cheetah: cfg.cheetah}
		if cfg.instance != nil {
			cfg.instance(&in)
		}
		must(t, in.Validate())
		must(t, m.SetInstance(in, e.table))
		must(t, EnsureNeighbors(mns.Netlink(), serverAddrs))
	}
	e.mux = e.muxes[0]

	// The servers: VIP on loopback, agent on eth0, an echo service on VIP:80
	// that names the server, and the MPTCP server-id endpoint.
	for name, s := range e.servers {
		netlabtest.ServeVIP(t, s, e2eVIP, "net.ipv4.ip_forward=1")
		_, err := s.Run("ip", "mptcp", "endpoint", "add", e2eVIP.String(), "dev", "lo", "port", fmt.Sprint(e2eID[name]), "signal")
		must(t, err)
		a, err := LoadAgent(AgentOptions{Addr: e2eServer[name], Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
			VIPs: []AgentVIP{{VIP: e2eVIP, Buckets: e2eBuckets, ChainWindow: window}}})
		must(t, err)
		t.Cleanup(func() { a.Close() })
		e.agents[name] = a
		must(t, s.Do(func() error { l, err := a.Attach("eth0"); hold(l, err); return nil }))
		if cfg.cheetah != nil {
			must(t, cheetah.SetVIP(a, cheetah.AgentVIP{VIP: e2eVIP, ID: uint16(e2eID[name]), Keys: cfg.cheetah.Keys}))
			must(t, s.Do(func() error { l, err := cheetah.AttachEgress(a, "eth0"); hold(l, err); return nil }))
		}
		serveEcho(t, s, name)
	}
	return e
}

// useMux points the client's route to the VIP at mux i, as a router whose
// ECMP set changed would.
func (e *e2eNet) useMux(t *testing.T, i int) {
	_, err := e.client.Run("ip", "route", "replace", e2eVIP.String()+"/32", "via", muxAddrN(i).String())
	must(t, err)
}

// publish applies the next generation to every mux.
func (e *e2eNet) publish(t *testing.T, d *forwarding.Delta) {
	e.gen++
	d.Generation = e.gen
	must(t, e.table.Apply(d))
	for _, m := range e.muxes {
		must(t, m.ApplyDelta("web", d))
	}
}

// serveEcho answers each line with "<server>:<line>" on VIP:80 (TCP and MPTCP).
func serveEcho(t *testing.T, ns *netlab.Namespace, name string) { serveEchoPort(t, ns, name, 80) }

// serveEchoPort is serveEcho on VIP:port.
func serveEchoPort(t *testing.T, ns *netlab.Namespace, name string, port uint16) {
	serveNamedEcho(t, ns, name, "tcp4", netip.AddrPortFrom(e2eVIP, port))
}

// serveNamedEcho answers each line with "<server>:<line>" on addr, TCP and
// MPTCP.
func serveNamedEcho(t *testing.T, ns *netlab.Namespace, name, network string, addr netip.AddrPort) {
	var lc net.ListenConfig
	lc.SetMultipathTCP(true)
	netlabtest.Serve(t, netlabtest.Listen(t, ns, &lc, network, addr.String()), func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if _, err := fmt.Fprintf(c, "%s:%s", name, line); err != nil {
				return
			}
		}
	})
}

type echoConn struct {
	net.Conn
	r *bufio.Reader
}

func (e *e2eNet) dial(t *testing.T, mptcp bool) *echoConn {
	t.Helper()
	return e.dialWithin(t, mptcp, answerWithin)
}

// dialWithin is dial with the caller's timeout, for connections opened while
// a flood may cost a SYN or two (each lost SYN costs Linux 1 s, then 2 s).
func (e *e2eNet) dialWithin(t *testing.T, mptcp bool, timeout time.Duration) *echoConn {
	t.Helper()
	return dialEcho(t, e.client, mptcp, timeout, "tcp4", netip.AddrPortFrom(e2eVIP, 80))
}

// dialEcho connects from client to a serveNamedEcho at addr.
func dialEcho(t *testing.T, client *netlab.Namespace, mptcp bool, timeout time.Duration, network string, addr netip.AddrPort) *echoConn {
	t.Helper()
	d := &net.Dialer{Timeout: timeout}
	d.SetMultipathTCP(mptcp)
	c := netlabtest.Dial(t, client, d, network, addr.String())
	return &echoConn{Conn: c, r: bufio.NewReader(c)}
}

// dialServed opens n connections with dial, each asked tag+i and answered
// by server want, else the test fails; they stay open for the test.
func dialServed(t *testing.T, n int, want, tag string, dial func() *echoConn) []*echoConn {
	t.Helper()
	var cs []*echoConn
	for i := 0; i < n; i++ {
		c := dial()
		if who, err := c.ask(fmt.Sprint(tag, i), answerWithin); err != nil || who != want {
			t.Fatalf("%s connection %d: served by %q, %v", tag, i, who, err)
		}
		cs = append(cs, c)
	}
	return cs
}

// attachAgentsXDP attaches every server's agent in native XDP too, as on a
// server whose NIC runs XDP; detached when the test ends.
func (e *e2eNet) attachAgentsXDP(t *testing.T) {
	for name, s := range e.servers {
		a := e.agents[name]
		must(t, s.Do(func() error {
			l, err := a.AttachXDP("eth0", XDPDriver)
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		}))
	}
}

// ask sends a line and returns the name of the server that answered.
func (c *echoConn) ask(msg string, timeout time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(c, "%s\n", msg); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	name, echoed, _ := strings.Cut(strings.TrimSpace(line), ":")
	if echoed != msg {
		return "", fmt.Errorf("echo %q for %q", line, msg)
	}
	return name, nil
}

// moveAll gives every bucket to server to, naming its owner so far as the
// previous owner, as the controller does.
func (e *e2eNet) moveAll(t *testing.T, from, to string, when time.Time) {
	d := &forwarding.Delta{}
	for i := 0; i < e2eBuckets; i++ {
		d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i),
			Bucket: forwarding.Bucket{Current: e2eID[to], History: forwarding.Chain{e2eID[from]}, Changed: uint32(when.Unix())}})
	}
	e.publish(t, d)
}

// settled is a counter once it has stopped moving (at most 2 s): the
// delayed ACKs of the connections just used may still be on their way to
// be chained, and a test counting what happens next must not count them.
func (e *e2eNet) settled(t *testing.T, server, name string) uint64 {
	v := e.counter(t, server, name)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		w := e.counter(t, server, name)
		if w == v {
			return v
		}
		v = w
	}
	return v
}

func (e *e2eNet) counter(t *testing.T, server, name string) uint64 {
	c, err := e.agents[server].Counters()
	must(t, err)
	return c[name]
}

func mptcpSubflows(c net.Conn) (int, error) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var gerr error
	err = rc.Control(func(fd uintptr) {
		info, err := unix.GetsockoptString(int(fd), 284 /* SOL_MPTCP */, 1 /* MPTCP_INFO */)
		if err != nil {
			gerr = fmt.Errorf("MPTCP_INFO: %v", err)
			return
		}
		if len(info) == 0 {
			return // not fully established yet: no info, no subflows
		}
		n = int(info[0]) // mptcpi_subflows: subflows besides the first
	})
	if err != nil {
		return 0, err
	}
	return n, gerr
}

// TestEndToEnd drives real TCP and MPTCP connections through the mux and the
// agents while a bucket move happens, and checks what the Beamer paper
// promises: no open connection breaks, new ones go to the new owner, SYN
// cookies are honoured, MPTCP subflows reach their server by id, and after
// the chaining window stray packets are reset or dropped by generation.
func TestEndToEnd(t *testing.T) {
	e := newE2E(t)
	const n = 16
	var old []*echoConn
	for i := 0; i < n; i++ {
		c := e.dial(t, false)
		if who, err := c.ask(fmt.Sprint("hello-", i), answerWithin); err != nil || who != "a" {
			t.Fatalf("connection %d before the move: served by %q, %v", i, who, err)
		}
		old = append(old, c)
	}

	moved := time.Now()
	e.moveAll(t, "a", "b", moved)
	for i, c := range old {
		if who, err := c.ask(fmt.Sprint("after-move-", i), answerWithin); err != nil || who != "a" {
			t.Fatalf("open connection %d broke after the move: served by %q, %v", i, who, err)
		}
	}
	if ch := e.counter(t, "b", "chained"); ch < n {
		t.Fatalf("server b chained %d packets, want at least %d", ch, n)
	}
	for i := 0; i < 4; i++ {
		if who, err := e.dial(t, false).ask("new", answerWithin); err != nil || who != "b" {
			t.Fatalf("new connection %d after the move: served by %q, %v", i, who, err)
		}
	}

	t.Run("syn cookies", func(t *testing.T) {
		must(t, e.servers["b"].Sysctl("net.ipv4.tcp_syncookies", "2"))
		defer e.servers["b"].Sysctl("net.ipv4.tcp_syncookies", "1")
		chained, cookies := e.settled(t, "b", "chained"), e.counter(t, "b", "local_cookie")
		for i := 0; i < 4; i++ {
			if who, err := e.dial(t, false).ask("cookie", answerWithin); err != nil || who != "b" {
				t.Fatalf("cookie connection %d: served by %q, %v", i, who, err)
			}
		}
		if d := e.counter(t, "b", "local_cookie") - cookies; d < 4 {
			t.Errorf("%d ACKs kept by their SYN cookie, want 4", d)
		}
		if d := e.counter(t, "b", "chained") - chained; d != 0 {
			t.Errorf("%d packets chained while cookie connections opened, want 0", d)
		}
	})

	t.Run("mptcp subflow by server id", func(t *testing.T) {
		before, err := e.mux.Counters()
		must(t, err)
		c := e.dial(t, true)
		if who, err := c.ask("mptcp", answerWithin); err != nil || who != "b" {
			t.Fatalf("mptcp connection: served by %q, %v", who, err)
		}
		subflows := 0
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && subflows == 0; time.Sleep(50 * time.Millisecond) {
			subflows, err = mptcpSubflows(c.Conn)
			must(t, err)
		}
		if subflows < 1 {
			t.Fatal("no secondary MPTCP subflow was established through the mux")
		}
		for i := 0; i < 20; i++ {
			if who, err := c.ask(fmt.Sprint("mp-", i), answerWithin); err != nil || who != "b" {
				t.Fatalf("mptcp exchange %d: served by %q, %v", i, who, err)
			}
		}
		after, err := e.mux.Counters()
		must(t, err)
		if after["fwd_server_id"] == before["fwd_server_id"] {
			t.Error("mux forwarded nothing by server id")
		}
	})

	t.Run("after the chaining window", func(t *testing.T) {
		e.agents["b"].SyncClock(moved.Add(4*time.Minute + time.Second))
		resets := e.counter(t, "b", "to_stack")
		_, err := old[0].ask("late", answerWithin)
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("stray packet at current generation: %v, want connection reset", err)
		}
		if e.counter(t, "b", "to_stack") == resets {
			t.Error("to_stack did not count the stray packet")
		}
		// A server that has seen a newer generation drops strays silently.
		e.agents["b"].SetNewestSeen(0, e.agents["b"].NewestSeen(0)+1)
		drops := e.counter(t, "b", "drop_stale_generation")
		_, err = old[1].ask("stale", 700*time.Millisecond)
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Fatalf("stray packet from a stale mux: %v, want a silent drop (timeout)", err)
		}
		if e.counter(t, "b", "drop_stale_generation") == drops {
			t.Error("drop_stale_generation did not count the stray packet")
		}
	})
}
