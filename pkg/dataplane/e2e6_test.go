package dataplane

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf/link"
)

// The IPv6 end-to-end network: the IPv4 one's shape (a bridge joining a
// client, a mux and servers a, b, c; DSR replies) over 2001:db8::/64, with
// the instance in GUE over IPv6.
var (
	e2e6VIP    = netip.MustParseAddr("2001:db8:100::1")
	e2e6Client = netip.MustParseAddr("2001:db8::100")
	e2e6Mux    = netip.MustParseAddr("2001:db8::1")
	e2e6Server = map[string]netip.Addr{"a": netip.MustParseAddr("2001:db8::10"), "b": netip.MustParseAddr("2001:db8::11"),
		"c": netip.MustParseAddr("2001:db8::12")}
)

func newE2E6(t *testing.T) *e2eNet {
	netlabtest.RequireRoot(t)
	rig := netlabtest.NewRig(t, "e2e6")
	rig.NoDAD = true // addresses usable at once
	names := []string{"a", "b", "c"}
	// GUE over IPv6 adds up to 164 bytes to a client's 1500.
	layout := netlabtest.DSRLayout{VIP: e2e6VIP, Client: netip.PrefixFrom(e2e6Client, 64), Muxes: []netip.Prefix{netip.PrefixFrom(e2e6Mux, 64)}, MTU: 1700}
	var serverAddrs []netip.Addr
	for _, name := range names {
		serverAddrs = append(serverAddrs, e2e6Server[name])
		layout.Servers = append(layout.Servers, netip.PrefixFrom(e2e6Server[name], 64))
	}
	d := rig.DSR(layout)
	mns := d.Muxes[0]
	e := &e2eNet{rig: rig, fabric: rig.Fabric(), client: d.Client, servers: map[string]*netlab.Namespace{}, agents: map[string]*Agent{}, gen: 1,
		muxNS: mns}
	for i, name := range names {
		e.servers[name] = d.Servers[i]
	}
	var links []link.Link
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

	table := forwarding.NewTable(e2eBuckets)
	for _, name := range names {
		table.Servers[e2eID[name]] = forwarding.Server{Addr: e2e6Server[name], State: forwarding.Active}
	}
	for i := range table.Buckets {
		table.Buckets[i] = forwarding.Bucket{Current: e2eID["a"]}
	}
	e.table = table
	e.table.Generation = e.gen
	must(t, mns.Sysctl("net.ipv6.conf.all.forwarding", "1"))
	m, err := LoadMux(MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), Addr6: e2e6Mux, ConnTrackEntries: 4096})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	e.muxes, e.mux = []*Mux{m}, m
	must(t, mns.Do(func() error { l, err := m.Attach("eth0", XDPDriver); hold(l, err); return nil }))
	in := forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{e2e6VIP},
		Services: []forwarding.Service{{Protocol: forwarding.TCP, Ports: forwarding.PortList{{Low: 80, High: 80}}},
			{Protocol: forwarding.UDP, Ports: forwarding.PortList{{Low: 53, High: 53}}}},
		Buckets: e2eBuckets, ChainWindow: 4 * time.Minute, Encap: forwarding.EncapGUE}
	must(t, in.Validate())
	must(t, m.SetInstance(in, e.table))
	must(t, EnsureNeighbors(mns.Netlink(), serverAddrs))

	for _, name := range names {
		s := e.servers[name]
		addAddr6(t, s, "lo", netip.PrefixFrom(e2e6VIP, 128))
		must(t, s.Sysctl("net.ipv6.conf.all.forwarding", "1")) // FIB lookups when chaining
		_, err := s.Run("ip", "mptcp", "endpoint", "add", e2e6VIP.String(), "dev", "lo", "port", fmt.Sprint(e2eID[name]), "signal")
		must(t, err)
		a, err := LoadAgent(AgentOptions{Addr6: e2e6Server[name], Trusted: []netip.Prefix{netip.MustParsePrefix("2001:db8::/64")},
			VIPs: []AgentVIP{{VIP: e2e6VIP, Buckets: e2eBuckets, ChainWindow: 4 * time.Minute}}})
		must(t, err)
		t.Cleanup(func() { a.Close() })
		e.agents[name] = a
		must(t, s.Do(func() error { l, err := a.Attach("eth0"); hold(l, err); return nil }))
		serveEcho6(t, s, name)
		serveUDP6(t, s, name)
	}
	return e
}

// serveUDP6 answers each datagram to [VIP]:53 with "<server>:<datagram>"
// from an unconnected socket (which proves nothing about a flow: the agent
// chains such datagrams on to the bucket's owner, docs/wire-format.md "UDP").
func serveUDP6(t *testing.T, ns *netlab.Namespace, name string) {
	var pc net.PacketConn
	must(t, ns.Do(func() (err error) {
		pc, err = net.ListenPacket("udp6", netip.AddrPortFrom(e2e6VIP, 53).String())
		return err
	}))
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo(append([]byte(name+":"), buf[:n]...), from)
		}
	}()
}

// serveEcho6 answers each line with "<server>:<line>" on [VIP]:80, TCP and MPTCP.
func serveEcho6(t *testing.T, ns *netlab.Namespace, name string) {
	serveNamedEcho(t, ns, name, "tcp6", netip.AddrPortFrom(e2e6VIP, 80))
}

func (e *e2eNet) dial6(t *testing.T, mptcp bool) *echoConn {
	t.Helper()
	return dialEcho(t, e.client, mptcp, answerWithin, "tcp6", netip.AddrPortFrom(e2e6VIP, 80))
}

// TestEndToEnd6 drives real IPv6 TCP and MPTCP connections through the mux
// (GUE over IPv6) and the agents while every bucket moves twice, A → B → C,
// inside the chaining window with the controller's histories: A's
// connections are chained C → B → A (two hops over IPv6), B's C → B, new
// connections go to C, SYN-cookie ACKs are kept by C, and an MPTCP
// connection's second subflow reaches C by its server-id port.
//
// The xdp run has each server's agent also attached in native XDP (the
// IPv6 fast path, beamer_agent6_xdp), as on a server whose NIC runs XDP: the
// same must hold, with the common packets decapsulated in XDP.
func TestEndToEnd6(t *testing.T) {
	t.Run("tc", func(t *testing.T) { endToEnd6(t, false) })
	t.Run("xdp", func(t *testing.T) { endToEnd6(t, true) })
}

func endToEnd6(t *testing.T, xdp bool) {
	e := newE2E6(t)
	if xdp {
		e.attachAgentsXDP(t)
	}
	const n = 6
	dial := func(want, tag string) []*echoConn {
		return dialServed(t, n, want, tag, func() *echoConn { return e.dial6(t, false) })
	}
	onA := dial("a", "a-")
	if d := e.counter(t, "a", "xdp_decap"); xdp && d < 3*n {
		t.Fatalf("server a decapsulated %d IPv6 packets in XDP, want at least %d (SYN and ACKs)", d, 3*n)
	} else if !xdp && d != 0 {
		t.Fatalf("server a decapsulated %d packets in XDP without an XDP program", d)
	}
	rules := &forwarding.HistoryRules{K: 4, Window: 240}
	move := func(to string) {
		rules.Now = uint32(time.Now().Unix())
		d := &forwarding.Delta{}
		for i, b := range e.table.Buckets {
			d.Buckets = append(d.Buckets, forwarding.BucketChange{Index: uint32(i),
				Bucket: rules.Moved(b, forwarding.Bucket{Current: e2eID[to], Changed: rules.Now})})
		}
		e.publish(t, d)
	}
	move("b")
	for i, c := range onA {
		if who, err := c.ask(fmt.Sprint("a-after-b-", i), answerWithin); err != nil || who != "a" {
			t.Fatalf("connection %d of A broke after A → B: served by %q, %v", i, who, err)
		}
	}
	if ch := e.counter(t, "b", "chained"); ch < n {
		t.Fatalf("server b chained %d packets over IPv6, want at least %d", ch, n)
	}
	onB := dial("b", "b-")
	move("c")
	chainedB, chainedC := e.counter(t, "b", "chained"), e.counter(t, "c", "chained")
	for i, c := range onB {
		if who, err := c.ask(fmt.Sprint("b-after-c-", i), answerWithin); err != nil || who != "b" {
			t.Fatalf("connection %d of B broke after B → C: served by %q, %v", i, who, err)
		}
	}
	for i, c := range onA {
		if who, err := c.ask(fmt.Sprint("a-after-c-", i), answerWithin); err != nil || who != "a" {
			t.Fatalf("connection %d of A broke after A → B → C: served by %q, %v", i, who, err)
		}
	}
	if d := e.counter(t, "b", "chained") - chainedB; d < n {
		t.Errorf("server b passed on %d of A's packets (second hop), want at least %d", d, n)
	}
	if d := e.counter(t, "c", "chained") - chainedC; d < 2*n {
		t.Errorf("server c chained %d packets, want at least %d", d, 2*n)
	}
	dial("c", "new-")
	if e.counter(t, "c", "ipv6") == 0 {
		t.Error("server c counted nothing on its IPv6 path")
	}

	t.Run("udp back to the owner along the history", func(t *testing.T) {
		// Every bucket's history is b, a; a datagram of a new flow is
		// chained c -> b -> a -> c (the owner ends a UDP list) and served
		// by c: no previous owner holds it in a connected socket.
		chained := e.counter(t, "a", "chained")
		var c net.Conn
		must(t, e.client.Do(func() (err error) {
			c, err = net.Dial("udp6", netip.AddrPortFrom(e2e6VIP, 53).String())
			return err
		}))
		defer c.Close()
		flow := &udpFlow{c: c} // resends, as a UDP client does
		for i := 0; i < 3; i++ {
			if who, err := flow.ask(fmt.Sprintf("q%d", i)); err != nil || who != "c" {
				t.Fatalf("datagram %d: answered by %q, %v; want c", i, who, err)
			}
		}
		if e.counter(t, "a", "chained") == chained {
			t.Error("server a chained none of the datagrams back to the owner")
		}
	})

	t.Run("syn cookies", func(t *testing.T) {
		must(t, e.servers["c"].Sysctl("net.ipv4.tcp_syncookies", "2")) // IPv6 listeners too
		defer e.servers["c"].Sysctl("net.ipv4.tcp_syncookies", "1")
		chained, cookies := e.settled(t, "c", "chained"), e.counter(t, "c", "local_cookie")
		for i := 0; i < 4; i++ {
			if who, err := e.dial6(t, false).ask("cookie", answerWithin); err != nil || who != "c" {
				t.Fatalf("cookie connection %d: served by %q, %v", i, who, err)
			}
		}
		if d := e.counter(t, "c", "local_cookie") - cookies; d < 4 {
			t.Errorf("%d ACKs kept by their SYN cookie over IPv6, want 4", d)
		}
		if d := e.counter(t, "c", "chained") - chained; d != 0 {
			t.Errorf("%d packets chained while cookie connections opened, want 0", d)
		}
	})

	t.Run("mptcp subflow by server id", func(t *testing.T) {
		// ADD_ADDR naming an IPv6 address and a port is 30 option bytes:
		// with TCP timestamps' 12 it exceeds TCP's 40, and Linux drops it
		// (MPTcpExtAddAddrTxDrop). Servers of IPv6 MPTCP instances run
		// without timestamps (docs/operations.md).
		must(t, e.servers["c"].Sysctl("net.ipv4.tcp_timestamps", "0"))
		defer e.servers["c"].Sysctl("net.ipv4.tcp_timestamps", "1")
		before, err := e.mux.Counters()
		must(t, err)
		c := e.dial6(t, true)
		if who, err := c.ask("mptcp", answerWithin); err != nil || who != "c" {
			t.Fatalf("mptcp connection: served by %q, %v", who, err)
		}
		subflows := 0
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && subflows == 0; time.Sleep(50 * time.Millisecond) {
			subflows, err = mptcpSubflows(c.Conn)
			must(t, err)
		}
		if subflows < 1 {
			o, _ := e.servers["c"].Run("nstat", "-az", "MPTcpExtAddAddr*")
			t.Fatal(o, "no secondary MPTCP subflow was established over IPv6 through the mux")
		}
		for i := 0; i < 10; i++ {
			if who, err := c.ask(fmt.Sprint("mp-", i), answerWithin); err != nil || who != "c" {
				t.Fatalf("mptcp exchange %d: served by %q, %v", i, who, err)
			}
		}
		after, err := e.mux.Counters()
		must(t, err)
		if after["fwd_server_id"] == before["fwd_server_id"] {
			t.Error("mux forwarded nothing by server id")
		}
	})
}

// TestClientPathMTU6: the mux's link has the client's MTU (1500), so the
// client's full-size IPv6 segments cannot be encapsulated in GUE over IPv6.
// The mux answers them with ICMPv6 Packet Too Big for 1432 (1500 − 68),
// the client's kernel lowers its path MTU to the VIP and resends, and a
// transfer of many full-size segments gets through.
func TestClientPathMTU6(t *testing.T) {
	e := newE2E6(t)
	_, err := e.muxNS.Run("ip", "link", "set", "eth0", "mtu", "1500")
	must(t, err)
	e.mux.FlushNextHops()
	c := e.dial6(t, false)
	msg := strings.Repeat("0123456789abcdef", 1000) // 16 000 bytes: full-size segments
	if who, err := c.ask(msg, 10*time.Second); err != nil || who != "a" {
		t.Fatalf("echo of %d bytes through a 1500-byte mux link: served by %q, %v", len(msg), who, err)
	}
	counters, err := e.mux.Counters()
	must(t, err)
	if counters["icmp_too_big"] == 0 {
		t.Errorf("no ICMPv6 Packet Too Big sent: %v", counters)
	}
	out, err := e.client.Run("ip", "-6", "route", "get", e2e6VIP.String())
	must(t, err)
	if !strings.Contains(out, "mtu 1432") {
		t.Errorf("client's route to the VIP has not learned MTU 1432:\n%s", out)
	}
}
