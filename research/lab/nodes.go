package lab

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
)

// muxNode is one mux namespace and its daemon.
type muxNode struct {
	ns       *netlab.Namespace
	proc     *process
	running  bool              // forwarding and announcing (not removed nor killed)
	counters map[string]uint64 // packet counters, read before the daemon stopped
}

// serverNode is one server namespace: its agent and its HTTP file server.
type serverNode struct {
	ns       *netlab.Namespace
	agent    *process
	http     *fileServer
	udp      *udpServer        // nil unless the lab offers UDP
	quic     *quicServer       // nil unless the lab offers QUIC
	inPool   bool              // a DIP of the instance
	counters map[string]uint64 // agent packet counters, read before it stopped
}

// metricsAddr is where muxes and agents serve /metrics in their namespace.
const metricsAddr = "127.0.0.1:9100"

// The counter families of the mux's and the agent's decisions.
const (
	muxPackets   = "beamer_mux_packets_total"
	agentPackets = "beamer_agent_packets_total"
)

// MuxCounters sums the packet counters of every mux that ran.
func (l *Lab) MuxCounters() map[string]uint64 {
	sum := map[string]uint64{}
	for _, m := range l.muxes {
		c := m.counters
		if m.proc != nil && m.proc.exited() == nil {
			if now, err := scrapeCounters(m.ns, muxPackets); err == nil {
				c = now
			}
		}
		for k, v := range c {
			sum[k] += v
		}
	}
	return sum
}

// AgentCounters are the agents' packet counters, by server name.
func (l *Lab) AgentCounters() map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	for i, s := range l.servers {
		c := s.counters
		if s.agent != nil && s.agent.exited() == nil {
			if now, err := scrapeCounters(s.ns, agentPackets); err == nil {
				c = now
			}
		}
		if c != nil {
			out[fmt.Sprintf("srv%d", i)] = c
		}
	}
	return out
}

// runningMuxes are the addresses of the muxes that forward.
func (l *Lab) runningMuxes() []netip.Addr {
	var out []netip.Addr
	for i, m := range l.muxes {
		if m.running {
			out = append(out, l.muxHop(i))
		}
	}
	return out
}

// StartMux starts mux i and waits until the router spreads VIP traffic
// over it: the mux follows the instance in the store and announces the VIP
// over BGP once loaded.
func (l *Lab) StartMux(ctx context.Context, i int) error {
	m, err := l.mux(i)
	if err != nil {
		return err
	}
	if m.proc != nil {
		return fmt.Errorf("mux %d was already started", i)
	}
	hold := fmt.Sprintf("%ds", int(l.opts.BGPHold/time.Second))
	// The node API serves the Prism keep-alive bits to the controller
	// across the fabric (mutual TLS, nodetls.go); an older binary serves
	// them on its metrics address, on every address.
	// --pin-dir -: the lab starts its daemons with `ip netns exec`, whose
	// private mount namespace gives each a bpffs that dies with it, so a
	// pin would not outlive the process anyway; saying so keeps the
	// daemons' start-time warning for operators who did not mean it.
	args := []string{"mux", "--instance", Instance, "--iface", "eth0", "--metrics", muxAPIAddr, "--pin-dir", "-",
		"--bgp-asn", fmt.Sprint(muxASN), "--bgp-peer", fmt.Sprintf("%s:%d", routerFabric, routerASN), "--bgp-hold-time", hold}
	apiArgs, err := l.muxAPIArgs(i)
	if err != nil {
		return err
	}
	args = append(append(args, apiArgs...), l.opts.MuxArgs...)
	bin := l.opts.Beamer
	if l.opts.MuxBinary != "" {
		bin = l.opts.MuxBinary
	}
	m.proc, err = startProgram(m.ns, l.opts.Dir, fmt.Sprintf("mux%d", i), bin, l.storeArgs(l.store, args...)...)
	if err != nil {
		return err
	}
	l.procs.add(m.proc)
	m.running = true
	if err := l.writePrismMuxes(); err != nil {
		return err
	}
	if err := waitFor(15*time.Second, m.proc, func() bool {
		out, _ := m.ns.Run("ip", "link", "show", "eth0")
		return strings.Contains(out, "xdp")
	}); err != nil {
		return err
	}
	l.seen.addPrograms(m.ns)
	return l.waitNextHops(ctx, l.runningMuxes(), 20*time.Second)
}

// RemoveMux stops mux i in order: it withdraws its route, the router
// moves its flows to the other muxes, then it detaches.
func (l *Lab) RemoveMux(ctx context.Context, i int) error {
	m, err := l.runningMux(i)
	if err != nil {
		return err
	}
	m.running = false
	if err := l.writePrismMuxes(); err != nil {
		return err
	}
	m.counters, _ = scrapeCounters(m.ns, muxPackets)
	m.proc.stop(10 * time.Second)
	return l.waitNextHops(ctx, l.runningMuxes(), 10*time.Second)
}

// KillMux fails mux i without warning: its interface goes down, as in the
// paper. The router notices when the BGP hold time runs out.
func (l *Lab) KillMux(ctx context.Context, i int) error {
	m, err := l.runningMux(i)
	if err != nil {
		return err
	}
	m.running = false
	if err := l.writePrismMuxes(); err != nil {
		return err
	}
	if _, err := m.ns.Run("ip", "link", "set", "eth0", "down"); err != nil {
		return err
	}
	return l.waitNextHops(ctx, l.runningMuxes(), l.opts.BGPHold+10*time.Second)
}

func (l *Lab) mux(i int) (*muxNode, error) {
	if i < 0 || i >= len(l.muxes) {
		return nil, fmt.Errorf("no mux %d: the lab has muxes 0–%d", i, len(l.muxes)-1)
	}
	return l.muxes[i], nil
}

func (l *Lab) runningMux(i int) (*muxNode, error) {
	m, err := l.mux(i)
	if err == nil && !m.running {
		err = fmt.Errorf("mux %d is not running", i)
	}
	return m, err
}

func (l *Lab) server(i int) (*serverNode, error) {
	if i < 0 || i >= len(l.servers) {
		return nil, fmt.Errorf("no server %d: the lab has servers 0–%d", i, len(l.servers)-1)
	}
	return l.servers[i], nil
}

// AddServer starts server i (agent, HTTP server) and adds it to the pool.
func (l *Lab) AddServer(i int) error {
	s, err := l.server(i)
	if err != nil {
		return err
	}
	if s.inPool {
		return fmt.Errorf("server %d is already in the pool", i)
	}
	if s.agent == nil {
		if err := l.startServer(i, s); err != nil {
			return err
		}
	}
	if _, err := l.Ctl("add-dip", Instance, fmt.Sprint(ServerID(i)), l.dip(i).String()); err != nil {
		return err
	}
	s.inPool = true
	return nil
}

func (l *Lab) startServer(i int, s *serverNode) (err error) {
	strat, err := StrategyOf(l.opts.Strategy)
	if err != nil {
		return err
	}
	window := strat.AgentWindow(l.opts.Window)
	vip := fmt.Sprintf("%s:%d:%s", l.vip(), l.opts.Buckets, window)
	if l.v6() {
		vip = fmt.Sprintf("[%s]:%d:%s", l.vip(), l.opts.Buckets, window)
	}
	args := []string{"agent", "--iface", "eth0", "--pin-dir", "-", // as the mux's (StartMux)
		"--id", fmt.Sprint(ServerID(i)), "--vip", vip,
		"--trusted", fabricNet.String(), "--metrics", metricsAddr}
	if l.v6() {
		// GUE over IPv6 comes from the muxes' and the other servers'
		// IPv6 addresses.
		args = append(args, "--trusted", fabricNet6.String())
	}
	if sa, ok := strat.(strategyArgs); ok {
		args = append(args, sa.agentArgs()...)
	}
	if l.agentAPI {
		// The controller asks the agent for health (probing VIP:port on the
		// server) and for the connections it still holds. On the DIP only:
		// on the VIP, clients could reach it.
		args = append(args, "--api", netip.AddrPortFrom(l.dip(i), agentAPIPort).String())
		tlsArgs, err := l.agentTLSArgs(i) // nodetls.go
		if err != nil {
			return err
		}
		args = append(args, tlsArgs...)
	}
	if err := l.shapeServer(i, s); err != nil {
		return err
	}
	if l.v6() {
		// An MPTCP ADD_ADDR of an IPv6 address with a port (VIP:server-id)
		// takes 30 option bytes; with TCP timestamps (12) it never fits in
		// the 40 a segment has, and the kernel does not send it (docs/operations.md).
		if err := s.ns.Sysctl("net.ipv4.tcp_timestamps", "0"); err != nil {
			return err
		}
	}
	if l.agentCapacity {
		args = append(args, "--capacity-bps", fmt.Sprint(agentNominalBps))
	}
	s.agent, err = startProgram(s.ns, l.opts.Dir, fmt.Sprintf("agent%d", i), l.opts.Beamer, args...)
	if err != nil {
		return err
	}
	l.procs.add(s.agent)
	if err := waitFor(10*time.Second, s.agent, func() bool {
		out, _ := s.ns.Run("ip", "addr", "show", "lo")
		return strings.Contains(out, l.vip().String())
	}); err != nil {
		return err
	}
	l.seen.addPrograms(s.ns)
	bind := netip.AddrPortFrom(netip.IPv4Unspecified(), 80)
	if l.v6() {
		bind = netip.AddrPortFrom(netip.IPv6Unspecified(), 80)
	}
	if l.opts.BindVIP {
		bind = netip.AddrPortFrom(l.vip(), 80) // on lo, where the agent put it
	}
	s.http, err = serveFiles(s.ns, fmt.Sprintf("srv%d", i), l.opts.FileSize, bind)
	if err == nil && l.opts.UDP {
		s.udp, err = serveUDP(s.ns, fmt.Sprintf("srv%d", i))
	}
	if err == nil && l.opts.QUIC {
		s.quic, err = serveQUIC(s.ns, fmt.Sprintf("srv%d", i), ServerID(i))
	}
	return err
}

// FailHealth makes server i's service refuse new connections, so health
// checks fail, while its link, its agent and its established connections
// stay: the server is alive and still holds connections others may chain
// to it.
func (l *Lab) FailHealth(i int) error {
	s, err := l.server(i)
	if err != nil {
		return err
	}
	if s.http == nil {
		return fmt.Errorf("server %d is not running", i)
	}
	if err := s.http.refuse(); err != nil {
		return fmt.Errorf("server %d: %w", i, err)
	}
	if !s.inPool {
		return nil
	}
	// The scenario is about what happens once the controller acts on the
	// failure: make sure it did (a few probe intervals).
	return l.waitDown(i, true, 8*time.Second)
}

// RestoreHealth makes server i's service accept connections again.
func (l *Lab) RestoreHealth(i int) error {
	s, err := l.server(i)
	if err != nil {
		return err
	}
	if s.http == nil {
		return fmt.Errorf("server %d is not running", i)
	}
	if err := s.http.accept(); err != nil {
		return fmt.Errorf("server %d: %w", i, err)
	}
	return nil
}

// RemoveServer takes server i out of the pool; it keeps running and
// serving the connections it has (daisy chaining brings their packets).
func (l *Lab) RemoveServer(i int) error { return l.RemoveServers(i) }

// RemoveServers takes servers out of the pool in one controller request, so
// their buckets move once, straight to the servers that stay.
func (l *Lab) RemoveServers(idx ...int) error {
	args := []string{"remove-dip", Instance}
	var servers []*serverNode
	for _, i := range idx {
		s, err := l.server(i)
		if err != nil {
			return err
		}
		if !s.inPool {
			return fmt.Errorf("server %d is not in the pool", i)
		}
		servers = append(servers, s)
		args = append(args, fmt.Sprint(ServerID(i)))
	}
	if _, err := l.Ctl(args...); err != nil {
		return err
	}
	for _, s := range servers {
		s.inPool = false
	}
	return nil
}

// FailServer kills server i: its interface goes down, its agent and HTTP
// server stop. The controller's health checks take it out of the pool.
func (l *Lab) FailServer(i int) error {
	s, err := l.server(i)
	if err != nil {
		return err
	}
	if s.agent == nil {
		return fmt.Errorf("server %d is not running", i)
	}
	if _, err := s.ns.Run("ip", "link", "set", "eth0", "down"); err != nil {
		return err
	}
	s.counters, _ = scrapeCounters(s.ns, agentPackets)
	s.http.close()
	s.udp.close()
	s.quic.close()
	s.agent.stop(5 * time.Second)
	return nil
}

// SetWeight changes server i's weight.
func (l *Lab) SetWeight(i, w int) error {
	if _, err := l.server(i); err != nil {
		return err
	}
	_, err := l.Ctl("set-weight", Instance, fmt.Sprint(ServerID(i)), fmt.Sprint(w))
	return err
}

// CreateInstance creates the lab's instance for the strategy.
func (l *Lab) CreateInstance() error {
	args := append([]string{"create", Instance, "--vip", l.vip().String(), "--ports", "80", "--buckets", fmt.Sprint(l.opts.Buckets),
		"--strategy", l.opts.Strategy, "--chain-window", l.opts.Window.String()}, l.opts.CreateArgs...)
	encap := l.opts.Encap
	if l.v6() {
		encap = string(forwarding.EncapGUE) // IPv6 travels in GUE only
	}
	args = append(args, encapArgs(encap)...) // encap.go
	var udp []string
	if l.opts.UDP {
		udp = append(udp, fmt.Sprint(UDPPort))
	}
	if l.opts.QUIC {
		udp = append(udp, fmt.Sprint(QUICPort))
		args = append(args, "--quic-cid-len", fmt.Sprint(labQUIC.CIDLen), "--quic-config", fmt.Sprint(labQUIC.ConfigID),
			"--quic-ports", fmt.Sprint(QUICPort))
	}
	if len(udp) > 0 {
		args = append(args, "--udp-ports", strings.Join(udp, ","))
	}
	if strat, err := StrategyOf(l.opts.Strategy); err == nil {
		if sa, ok := strat.(strategyArgs); ok {
			args = append(args, sa.createArgs()...)
		}
	}
	_, err := l.Ctl(args...)
	return err
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
