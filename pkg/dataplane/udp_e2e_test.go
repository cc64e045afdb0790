package dataplane

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab"
	"golang.org/x/sys/unix"
)

const e2eUDPPort = 53

// udpServices adds UDP 53 beside TCP 80.
func udpServices(in *forwarding.Instance) {
	in.Services = append(in.Services, forwarding.Service{Protocol: forwarding.UDP,
		Ports: forwarding.PortList{{Low: e2eUDPPort, High: e2eUDPPort}}})
}

// reuseAddr lets a bound UDP socket and connected ones share VIP:53.
func reuseAddr(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1) }); err != nil {
		return err
	}
	return serr
}

// serveUDP answers each datagram on VIP:53 with "<server>:<datagram>".
// A datagram starting with "connect " makes the server open a socket
// connected to its sender (as per-client UDP servers — QUIC stacks with
// connected sockets, game servers — do); that client's later datagrams
// reach the connected socket, which answers them. Other clients are
// answered by the bound socket alone (a DNS-style unconnected service).
func serveUDP(t *testing.T, ns *netlab.Namespace, name string) {
	lc := net.ListenConfig{Control: reuseAddr}
	var l net.PacketConn
	must(t, ns.Do(func() error {
		var err error
		l, err = lc.ListenPacket(context.Background(), "udp4", netip.AddrPortFrom(e2eVIP, e2eUDPPort).String())
		return err
	}))
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := []net.Conn{}
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	answer := func(msg string) []byte { return []byte(name + ":" + msg) }
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, from, err := l.ReadFrom(buf)
			if err != nil {
				return
			}
			msg := string(buf[:n])
			if !strings.HasPrefix(msg, "connect ") {
				l.WriteTo(answer(msg), from)
				continue
			}
			var c net.Conn
			err = ns.Do(func() error {
				d := net.Dialer{LocalAddr: net.UDPAddrFromAddrPort(netip.AddrPortFrom(e2eVIP, e2eUDPPort)), Control: reuseAddr}
				var err error
				c, err = d.Dial("udp4", from.String())
				return err
			})
			if err != nil {
				l.WriteTo([]byte("error "+err.Error()), from)
				continue
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			c.Write(answer(msg))
			wg.Add(1)
			go func() {
				defer wg.Done()
				b := make([]byte, 2048)
				for {
					n, err := c.Read(b)
					if err != nil {
						return
					}
					c.Write(answer(string(b[:n])))
				}
			}()
		}
	}()
}

// udpFlow is a client's UDP socket to VIP:53 (one 5-tuple).
type udpFlow struct{ c net.Conn }

func (e *e2eNet) udpFlow(t *testing.T) *udpFlow {
	t.Helper()
	var c net.Conn
	must(t, e.client.Do(func() error {
		var err error
		c, err = net.Dial("udp4", netip.AddrPortFrom(e2eVIP, e2eUDPPort).String())
		return err
	}))
	t.Cleanup(func() { c.Close() })
	return &udpFlow{c}
}

// ask sends msg and returns the server that answered, retrying a few
// times (UDP may lose a datagram; none is lost here unless the path is
// broken, which the retries do not hide: every try goes the same way).
func (f *udpFlow) ask(msg string) (string, error) {
	buf := make([]byte, 2048)
	var err error
	for try := 0; try < 3; try++ {
		if _, err = f.c.Write([]byte(msg)); err != nil {
			return "", err
		}
		f.c.SetReadDeadline(time.Now().Add(700 * time.Millisecond))
		var n int
		if n, err = f.c.Read(buf); err != nil {
			continue
		}
		who, echoed, _ := strings.Cut(string(buf[:n]), ":")
		if echoed != msg {
			return "", fmt.Errorf("answer %q to %q", buf[:n], msg)
		}
		return who, nil
	}
	return "", err
}

// TestEndToEndUDP: a UDP service through a real mux and agents while every
// bucket moves from A to B. Request/response flows (the server answers from
// its bound socket) are served by the bucket's owner: after the move, B.
// Long-lived flows whose server connected a socket to the client stay with
// A (daisy-chained B → A, counted), while new flows and unconnected ones go
// to B: the packet that no previous owner holds in a connected socket comes
// back to the current owner at the end of the list.
func TestEndToEndUDP(t *testing.T) {
	e := newE2EWith(t, e2eConfig{strategy: forwarding.StrategyBeamer, muxes: 1, table: allToA, instance: udpServices})
	for name, ns := range e.servers {
		serveUDP(t, ns, name)
	}
	const n = 8
	var long, plain []*udpFlow
	for i := 0; i < n; i++ {
		f := e.udpFlow(t)
		if who, err := f.ask(fmt.Sprint("connect ", i)); err != nil || who != "a" {
			t.Fatalf("connected flow %d: served by %q, %v", i, who, err)
		}
		if who, err := f.ask(fmt.Sprint("long-", i)); err != nil || who != "a" {
			t.Fatalf("connected flow %d, second datagram: served by %q, %v", i, who, err)
		}
		long = append(long, f)
		p := e.udpFlow(t)
		if who, err := p.ask(fmt.Sprint("query-", i)); err != nil || who != "a" {
			t.Fatalf("request/response flow %d: served by %q, %v", i, who, err)
		}
		plain = append(plain, p)
	}
	chainedB, stackB := e.counter(t, "b", "chained"), e.counter(t, "b", "to_stack")
	e.moveAll(t, "a", "b", time.Now())

	for i, f := range long {
		if who, err := f.ask(fmt.Sprint("after-", i)); err != nil || who != "a" {
			t.Fatalf("connected flow %d broke when its bucket moved A → B: served by %q, %v", i, who, err)
		}
	}
	if d := e.counter(t, "b", "chained") - chainedB; d < n {
		t.Errorf("B chained %d datagrams of connected flows to A, want at least %d", d, n)
	}
	// Unconnected flows have no affinity: their server cannot be told from
	// any other by a socket lookup, so they follow the bucket (documented).
	for i, p := range plain {
		if who, err := p.ask(fmt.Sprint("query-after-", i)); err != nil || who != "b" {
			t.Fatalf("request/response flow %d after the move: served by %q, %v, want b (the bucket's owner)", i, who, err)
		}
	}
	for i := 0; i < n; i++ {
		f := e.udpFlow(t)
		if who, err := f.ask(fmt.Sprint("new-", i)); err != nil || who != "b" {
			t.Fatalf("new flow %d after the move: served by %q, %v, want b", i, who, err)
		}
	}
	// The new and unconnected flows went B → A → back to B: A chained them
	// on to B, and B gave them to its stack at the end of the list.
	if d := e.counter(t, "a", "chained"); d < 2*n {
		t.Errorf("A chained %d datagrams back to B, want at least %d", d, 2*n)
	}
	if d := e.counter(t, "b", "to_stack") - stackB; d < 2*n {
		t.Errorf("B took %d returned datagrams to its stack, want at least %d", d, 2*n)
	}
	c, err := e.mux.Counters()
	must(t, err)
	if c["drop_not_tcp"] != 0 || c["drop_closed_port"] != 0 {
		t.Errorf("mux dropped UDP: %v", c)
	}
}

// TestEndToEndPorts: a TCP service on 8443 (above 1024) beside a server-id
// range that leaves it out, and the ports a VIP does not name are closed —
// also under Maglev, which before issue 17 forwarded every port above 1024.
func TestEndToEndPorts(t *testing.T) {
	for _, strategy := range []forwarding.Strategy{forwarding.StrategyBeamer, forwarding.StrategyMaglev} {
		t.Run(string(strategy), func(t *testing.T) {
			e := newE2EWith(t, e2eConfig{strategy: strategy, muxes: 1, table: allToA, instance: func(in *forwarding.Instance) {
				in.Services = []forwarding.Service{{Protocol: forwarding.TCP, Ports: forwarding.PortList{{Low: 8443, High: 8443}}}}
				in.ServerIDRange = &forwarding.ServerIDRange{PortRange: forwarding.PortRange{Low: 1025, High: 2047}}
			}})
			for name, ns := range e.servers {
				serveEchoPort(t, ns, name, 8443)
				serveEchoPort(t, ns, name, 9000) // listening, but not a service of the VIP
			}
			c := e.dialPort(t, 8443)
			if c == nil {
				t.Fatal("no connection to the service on 8443")
			}
			if who, err := c.ask("hello", answerWithin); err != nil || who != "a" {
				t.Fatalf("service on 8443: served by %q, %v", who, err)
			}
			before, err := e.mux.Counters()
			must(t, err)
			if c := e.dialPort(t, 9000); c != nil {
				t.Fatal("port 9000 is no service of the VIP, yet a connection was made through the mux")
			}
			after, err := e.mux.Counters()
			must(t, err)
			if after["drop_closed_port"] == before["drop_closed_port"] {
				t.Errorf("SYNs to port 9000 were not counted as closed: %v", after)
			}
		})
	}
}

// dialPort connects to VIP:port within a second, or returns nil.
func (e *e2eNet) dialPort(t *testing.T, port uint16) *echoConn {
	t.Helper()
	d := net.Dialer{Timeout: time.Second}
	var c net.Conn
	err := e.client.Do(func() error {
		var err error
		c, err = d.Dial("tcp4", netip.AddrPortFrom(e2eVIP, port).String())
		return err
	})
	if err != nil {
		return nil
	}
	t.Cleanup(func() { c.Close() })
	return &echoConn{Conn: c, r: bufio.NewReader(c)}
}

// TestEndToEndUDPMaglev: under Maglev a UDP flow is remembered in the
// mux's connection table like a TCP connection, so when the Maglev table
// sends its hash to B, every known flow — connected socket or not — stays
// with A (ct_hit), and new flows go to B.
func TestEndToEndUDPMaglev(t *testing.T) {
	e := newE2EWith(t, e2eConfig{strategy: forwarding.StrategyMaglev, muxes: 1, table: allToA, instance: udpServices})
	for name, ns := range e.servers {
		serveUDP(t, ns, name)
	}
	const n = 6
	var flows []*udpFlow
	for i := 0; i < n; i++ {
		f := e.udpFlow(t)
		msg := fmt.Sprint("query-", i)
		if i%2 == 0 {
			msg = fmt.Sprint("connect ", i)
		}
		if who, err := f.ask(msg); err != nil || who != "a" {
			t.Fatalf("flow %d: served by %q, %v", i, who, err)
		}
		flows = append(flows, f)
	}
	before, err := e.mux.Counters()
	must(t, err)
	e.moveAll(t, "a", "b", time.Now())
	for i, f := range flows {
		if who, err := f.ask(fmt.Sprint("after-", i)); err != nil || who != "a" {
			t.Fatalf("flow %d after the Maglev table moved to B: served by %q, %v, want a (its connection entry)", i, who, err)
		}
	}
	after, err := e.mux.Counters()
	must(t, err)
	if d := after["ct_hit"] - before["ct_hit"]; d < n {
		t.Errorf("ct_hit moved by %d, want at least %d", d, n)
	}
	f := e.udpFlow(t)
	if who, err := f.ask("new"); err != nil || who != "b" {
		t.Fatalf("new flow: served by %q, %v, want b", who, err)
	}
}
