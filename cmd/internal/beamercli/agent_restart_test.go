package beamercli

import (
	"fmt"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Issue 28, items 1 and 2: an agent restarted the usual way (SIGTERM, then
// a start: systemctl restart, a package upgrade) on a server that holds
// connections keeps decapsulating them, and a Cheetah server keeps
// writing cookies, so no connection breaks. The agent is the real
// `beamer agent` (this test binary as beamer), started with nsenter so its
// pins live in the machine's bpffs as under systemd.

var (
	arVIP     = netip.MustParseAddr("198.18.100.1")
	arClient  = netip.MustParseAddr("198.18.0.100")
	arMux     = netip.MustParseAddr("198.18.0.1")
	arServer  = netip.MustParseAddr("198.18.0.10") // the restarted agent's server, id 1030
	arServer2 = netip.MustParseAddr("198.18.0.11") // beamer: the buckets' new owner, id 1031
)

const arBuckets = 67

// arKeys are the Cheetah instance's cookie keys.
var arKeys = cookie.Keys{Current: 0, Keys: [2]cookie.Key{{0x01234567, 0x89abcdef, 0xfedcba98, 0x76543210}, {0xdeadbeef, 0x0badf00d, 0x12345678, 0x9e3779b9}}}

// agentRestartRig is client — bridge — mux (XDP) and the server whose
// daemon restarts, and for beamer a second server. One of the mux and the
// first server's agent is a `beamer` process (the one restarted), the
// other runs in this process.
type agentRestartRig struct {
	strategy          forwarding.Strategy
	client, srv, srv2 *netlab.Namespace
	muxNS             *netlab.Namespace
	mux               *dataplane.Mux // in this process (agent restarts)
	instance          forwarding.Instance
	window            string // the agents' chaining window
	cfg, pins, state  string // the restarted daemon's file, pins and node record
	srv2Agent         *dataplane.Agent
}

func newAgentRestartRig(t *testing.T, strategy forwarding.Strategy) *agentRestartRig {
	r := newRestartRig(t, strategy, "agrs")
	r.startMuxHere(t)
	if strategy == forwarding.StrategyBeamer {
		// The second server's agent, in this process: it owns the buckets
		// after the move and chains the first server's connections to it.
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(r.srv2.Sysctl("net.ipv4.conf.eth0.forwarding", "1"))
		must(dataplane.EnsureNeighbors(r.srv2.Netlink(), []netip.Addr{arServer}))
		r.srv2Agent = r.agentHere(t, r.srv2, arServer2, 1031)
	}
	r.writeAgentConfig(t, strategy == forwarding.StrategyCheetah)
	return r
}

// writeAgentConfig writes the restarted agent's file; keys gives it the
// Cheetah keys (else it has only what a predecessor left pinned, as an
// agent whose keys the controller pushes).
func (r *agentRestartRig) writeAgentConfig(t *testing.T, keys bool) {
	t.Helper()
	vip := fmt.Sprintf("  - {vip: %s, buckets: %d, chain_window: %s}\n", arVIP, arBuckets, r.window)
	if keys {
		vip = fmt.Sprintf("  - {vip: %s, buckets: %d, chain_window: %s, cheetah: {current: %d, keys: [%s, %s]}}\n",
			arVIP, arBuckets, r.window, arKeys.Current, arKeys.Keys[0], arKeys.Keys[1])
	}
	if err := os.WriteFile(r.cfg, []byte("interface: eth0\nserver_id: 1030\ntrusted: [198.18.0.0/24]\nmptcp: false\napi: \"off\"\nvips:\n"+vip), 0o600); err != nil {
		t.Fatal(err)
	}
}

// newRestartRig makes the namespaces, the links and the services.
func newRestartRig(t *testing.T, strategy forwarding.Strategy, tag string) *agentRestartRig {
	d := netlabtest.NewRig(t, tag).DSR(netlabtest.DSRLayout{VIP: arVIP, Client: netip.PrefixFrom(arClient, 24), Muxes: []netip.Prefix{netip.PrefixFrom(arMux, 24)},
		Servers: []netip.Prefix{netip.PrefixFrom(arServer, 24), netip.PrefixFrom(arServer2, 24)}, MTU: 1600})
	r := &agentRestartRig{strategy: strategy, client: d.Client, muxNS: d.Muxes[0], srv: d.Servers[0], srv2: d.Servers[1], window: "4m"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(r.muxNS.Sysctl("net.ipv4.ip_forward", "1"))

	r.instance = forwarding.Instance{Name: "web", Strategy: strategy, VIPs: []netip.Addr{arVIP}, PortLow: 80, PortHigh: 80, Buckets: arBuckets}
	switch strategy {
	case forwarding.StrategyBeamer:
		r.instance.ChainWindow = forwarding.DefaultChainWindow
	case forwarding.StrategyPrism, forwarding.StrategyMaglev, forwarding.StrategyAWFD:
		r.window = "0s" // they never chain
	case forwarding.StrategyCheetah:
		r.instance.Cheetah = &forwarding.CheetahOptions{Policy: forwarding.CheetahRR, Keys: arKeys}
	}
	// The servers: an echo and a download service on port 80 (netlabtest.ServeEcho).
	for _, s := range []*netlab.Namespace{r.srv, r.srv2} {
		netlabtest.Sysctls(t, s, "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.eth0.rp_filter=0")
		netlabtest.ServeEcho(t, netlabtest.Listen(t, s, nil, "tcp4", ":80"))
	}
	dir := t.TempDir()
	r.cfg, r.state, r.pins = filepath.Join(dir, "daemon.yaml"), filepath.Join(dir, "daemon-state.json"), netlabtest.PinDir(t, tag)
	return r
}

// startMuxHere runs the mux in this process.
func (r *agentRestartRig) startMuxHere(t *testing.T) {
	var err error
	r.mux, err = dataplane.LoadMux(dataplane.MuxOptions{Addr: arMux})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.mux.Close() })
	err = r.muxNS.Do(func() error {
		l, err := r.mux.Attach("eth0", dataplane.XDPDriver)
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	})
	if err == nil {
		err = r.setTable(1, forwarding.Bucket{Current: 1030})
	}
	if err == nil {
		err = dataplane.EnsureNeighbors(r.muxNS.Netlink(), []netip.Addr{arServer, arServer2})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// agentHere runs a server's agent program in this process: the VIP on
// loopback, the tc program, Cheetah's keys and cookie writer.
func (r *agentRestartRig) agentHere(t *testing.T, ns *netlab.Namespace, addr netip.Addr, id uint16) *dataplane.Agent {
	t.Helper()
	window := forwarding.DefaultChainWindow
	if r.window == "0s" { // a strategy that never chains
		window = 0
	}
	for _, kv := range [][2]string{{"net.ipv4.conf.all.arp_ignore", "1"}, {"net.ipv4.conf.all.arp_announce", "2"}} {
		if err := ns.Sysctl(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := ns.AddAddr("lo", netip.PrefixFrom(arVIP, 32)); err != nil {
		t.Fatal(err)
	}
	a, err := dataplane.LoadAgent(dataplane.AgentOptions{Addr: addr, Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []dataplane.AgentVIP{{VIP: arVIP, Buckets: arBuckets, ChainWindow: window}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	hold := func(l link.Link, err error) error {
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	}
	err = ns.Do(func() error { return hold(a.Attach("eth0")) })
	if err == nil && r.strategy == forwarding.StrategyCheetah {
		if err = cheetah.SetVIP(a, cheetah.AgentVIP{VIP: arVIP, ID: id, Keys: arKeys}); err == nil {
			err = ns.Do(func() error { return hold(cheetah.AttachEgress(a, "eth0")) })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// setTable gives every bucket b, at generation gen.
func (r *agentRestartRig) setTable(gen uint32, b forwarding.Bucket) error {
	table := forwarding.NewTable(arBuckets)
	table.Generation = gen
	table.Servers[1030] = forwarding.Server{Addr: arServer, State: forwarding.Active}
	if r.strategy == forwarding.StrategyBeamer {
		table.Servers[1031] = forwarding.Server{Addr: arServer2, State: forwarding.Active}
	}
	for i := range table.Buckets {
		table.Buckets[i] = b
	}
	return r.mux.SetInstance(r.instance, table)
}

// startAgent runs `beamer agent` on the first server, as systemd does: in
// the machine's mount namespace (nsenter enters the network namespace
// only), and waits until it runs. It returns the process and how long the
// start took.
func (r *agentRestartRig) startAgent(t *testing.T) (*proc, time.Duration) {
	t.Helper()
	p := nsenterBeamer(t, r.srv, "agent", "--config", r.cfg, "--pin-dir", r.pins, "--state-file", r.state)
	began := time.Now()
	p.waitFor(t, "agent", "agent running")
	return p, time.Since(began)
}

// nsenterBeamer runs `beamer ARGS` (this test binary as beamer) in ns's
// network namespace only, in the background; killed when the test ends.
func nsenterBeamer(t *testing.T, ns *netlab.Namespace, args ...string) *proc {
	t.Helper()
	return startKilledAtEnd(t, exec.Command("nsenter", append([]string{"--net=/var/run/netns/" + ns.Name, "--", os.Args[0]}, args...)...))
}

// startKilledAtEnd starts cmd as beamer (childEnv), its output collected,
// killed with its parent and when the test ends.
func startKilledAtEnd(t *testing.T, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), childEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// stop signals the process and waits for it to exit.
func (p *proc) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit 20 s after %v:\n%s", sig, p.output())
	}
}

func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL", syscall.SIGUSR2: "SIGUSR2"}[s]
}

// tcPrograms counts the tc programs at eth0's ingress and egress of ns.
func tcPrograms(t *testing.T, ns *netlab.Namespace) (ingress, egress int) {
	t.Helper()
	err := ns.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		for _, a := range []struct {
			at ebpf.AttachType
			n  *int
		}{{ebpf.AttachTCXIngress, &ingress}, {ebpf.AttachTCXEgress, &egress}} {
			res, err := link.QueryPrograms(link.QueryOptions{Target: ifi.Index, Attach: a.at})
			if err != nil {
				return err
			}
			*a.n = len(res.Programs)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ingress, egress
}

// arEcho, arStream are the clients' connections: echo connections
// exchanging a line every arEchoEvery and download connections reading.
const arEcho, arStream = 4, 4

// arEchoEvery is the pause between two exchanges of an echo connection:
// the resolution of the pauses the restart tests report.
const arEchoEvery = 2 * time.Millisecond

// load starts the clients' traffic, each connection recording its
// progress, its longest pause and how it failed.
func (r *agentRestartRig) load(t *testing.T) *netlabtest.Load {
	return netlabtest.StartLoad(t, r.client, netlabtest.LoadOptions{Network: "tcp4", Address: netip.AddrPortFrom(arVIP, 80).String(),
		Echo: arEcho, Stream: arStream, Every: arEchoEvery})
}

// TestAgentRestartHitless: under live connections, for Beamer (the
// restarted server also a previous owner whose connections reach it
// daisy-chained), Prism and Cheetah, Maglev and AWFD beside them: the agent is stopped with SIGTERM,
// its programs (and Cheetah's cookie writer) stay attached while no agent
// runs, a new agent adopts them; then the same after SIGKILL. No
// connection breaks; the longest pause of a connection is reported (it
// bounds the gap in decapsulation). `beamer agent cleanup` then refuses
// while an agent runs, and after a stop removes everything.
func TestAgentRestartHitless(t *testing.T) {
	for _, s := range []forwarding.Strategy{forwarding.StrategyBeamer, forwarding.StrategyPrism, forwarding.StrategyCheetah,
		forwarding.StrategyMaglev, forwarding.StrategyAWFD} {
		t.Run(string(s), func(t *testing.T) { testAgentRestart(t, s) })
	}
}

func testAgentRestart(t *testing.T, strategy forwarding.Strategy) {
	r := newAgentRestartRig(t, strategy)
	agent, took := r.startAgent(t)
	t.Logf("first agent running %v after its start", took.Round(time.Millisecond))
	load := r.load(t)
	load.Flowing(t, "before the restart")
	wantEgress := 0
	if strategy == forwarding.StrategyCheetah {
		wantEgress = 1
	}

	if strategy == forwarding.StrategyBeamer {
		// Every bucket moves to the second server: the first one's
		// connections now arrive there and are chained back to it.
		before, err := r.srv2Agent.Counters()
		if err != nil {
			t.Fatal(err)
		}
		if err := r.setTable(2, forwarding.Bucket{Current: 1031, History: forwarding.Chain{1030}, Changed: uint32(time.Now().Unix())}); err != nil {
			t.Fatal(err)
		}
		load.Flowing(t, "after the buckets moved")
		after, err := r.srv2Agent.Counters()
		if err != nil {
			t.Fatal(err)
		}
		if after["chained"] == before["chained"] {
			t.Fatalf("no packet chained to the previous owner after the move (counters %v)", after)
		}
	}

	if strategy == forwarding.StrategyCheetah {
		// The next agents get no keys from their file: they must write
		// cookies with the keys pinned by the first one (where the
		// controller's pushes land too).
		r.writeAgentConfig(t, false)
	}
	echo, stream := load.TakeLongest()
	t.Logf("%s, no restart: longest pause of a connection %v (echo, a line every 2 ms), %v (download)", strategy, echo.Round(time.Millisecond), stream.Round(time.Millisecond))
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		agent.stop(t, sig)
		if in, eg := tcPrograms(t, r.srv); in != 1 || eg != wantEgress {
			t.Fatalf("after %v: %d programs at tc ingress, %d at egress; want the stopped agent's %d and %d still attached:\n%s",
				sig, in, eg, 1, wantEgress, agent.output())
		}
		if out, _ := r.srv.Run("ip", "addr", "show", "lo"); !strings.Contains(out, arVIP.String()) {
			t.Fatalf("after %v: the VIP left loopback:\n%s", sig, out)
		}
		load.Flowing(t, fmt.Sprintf("no agent running after %v", sig))
		agent, took = r.startAgent(t)
		t.Logf("after %s: the next agent running %v after its start", sigName(sig), took.Round(time.Millisecond))
		load.Flowing(t, fmt.Sprintf("the next agent after %v", sig))
		if in, eg := tcPrograms(t, r.srv); in != 1 || eg != wantEgress {
			t.Fatalf("after the restart: %d programs at tc ingress, %d at egress, want %d and %d", in, eg, 1, wantEgress)
		}
		echo, stream := load.TakeLongest()
		t.Logf("%s, agent %s and start: longest pause of a connection %v (echo, a line every 2 ms), %v (download)",
			strategy, sigName(sig), echo.Round(time.Millisecond), stream.Round(time.Millisecond))
	}
	broken := load.End()
	t.Logf("%s: %d of %d connections broken", strategy, len(broken), arEcho+arStream)
	if len(broken) > 0 {
		t.Fatalf("connections broke: %v\nagent:\n%s", broken, agent.output())
	}
	if strategy == forwarding.StrategyCheetah {
		c, err := r.mux.CountersOf(forwarding.StrategyCheetah)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("mux cheetah counters: %v", c)
		if c["bad_cookie"] != 0 {
			t.Errorf("the mux dropped %d segments as bad cookies: a server sent a timestamp without its cookie", c["bad_cookie"])
		}
	}

	// The explicit uninstall: refused while an agent runs, then complete.
	cleanup := func() (string, error) {
		p := nsenterBeamer(t, r.srv, "agent", "cleanup", "--iface", "eth0", "--pin-dir", r.pins, "--state-file", r.state)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Fatalf("agent cleanup still running after 30 s:\n%s", p.output())
		}
		if !p.cmd.ProcessState.Success() {
			return p.output(), fmt.Errorf("exit %d", p.cmd.ProcessState.ExitCode())
		}
		return p.output(), nil
	}
	if out, err := cleanup(); err == nil || !strings.Contains(out, "another agent runs on this interface") {
		t.Fatalf("cleanup beside a running agent: %v\n%s", err, out)
	}
	agent.stop(t, syscall.SIGTERM)
	if out, err := cleanup(); err != nil {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
	if in, eg := tcPrograms(t, r.srv); in != 0 || eg != 0 {
		t.Errorf("after cleanup: %d programs at tc ingress, %d at egress", in, eg)
	}
	if out, _ := r.srv.Run("ip", "addr", "show", "lo"); strings.Contains(out, arVIP.String()) {
		t.Errorf("after cleanup: the VIP is still on loopback:\n%s", out)
	}
	for _, p := range []string{r.pins, r.state} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("after cleanup: %s left (%v)", p, err)
		}
	}
}
