package netlabtest_test

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestRigRemovesItsNamespaces: a rig's namespaces, the fabric's too, are
// gone once its test ends (t.Cleanup, which runs on failure too).
func TestRigRemovesItsNamespaces(t *testing.T) {
	netlabtest.RequireRoot(t)
	var names []string
	t.Run("build", func(t *testing.T) {
		rig := netlabtest.NewRig(t, "rig")
		a, b := rig.Pair("a", netip.MustParsePrefix("198.18.0.1/24"), "b", netip.MustParsePrefix("198.18.0.2/24"), 0)
		c := rig.Namespace("c")
		rig.Attach(c, netip.MustParsePrefix("198.18.1.1/24"), 0)
		names = []string{a.Name, b.Name, c.Name, rig.Fabric().Name}
	})
	if len(names) != 4 {
		t.Fatalf("namespaces %v, want 4", names)
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(netlab.RunDir, n)); !os.IsNotExist(err) {
			t.Errorf("namespace %s left after its test ended: %v", n, err)
		}
	}
}

// TestDSRLayoutAndLoad: on a DSR layout without a mux program (the "mux"
// forwards as a router would), a Load flows to a ServeEcho server, and a
// server that closes its connections is reported as broken connections.
func TestDSRLayoutAndLoad(t *testing.T) {
	rig := netlabtest.NewRig(t, "dsr")
	vip := netip.MustParseAddr("198.18.100.1")
	d := rig.DSR(netlabtest.DSRLayout{VIP: vip, Client: netip.MustParsePrefix("198.18.0.100/24"),
		Muxes: []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24")}, Servers: []netip.Prefix{netip.MustParsePrefix("198.18.0.10/24")}, MTU: 1600})
	// The "mux" routes the VIP on to the server, which answers directly.
	netlabtest.Sysctls(t, d.Muxes[0], "net.ipv4.ip_forward=1", "net.ipv4.conf.all.send_redirects=0", "net.ipv4.conf.eth0.send_redirects=0")
	_, err := d.Muxes[0].Run("ip", "route", "add", vip.String()+"/32", "via", "198.18.0.10")
	netlabtest.Must(t, err)
	netlabtest.ServeVIP(t, d.Servers[0], vip)
	addr := netip.AddrPortFrom(vip, 80).String()
	netlabtest.ServeEcho(t, netlabtest.Listen(t, d.Servers[0], nil, "tcp4", addr))

	// A plain echo client, as pmtu and inspect tests use it.
	c := netlabtest.Dial(t, d.Client, nil, "tcp4", addr)
	c.SetDeadline(time.Now().Add(netlabtest.AnswerWithin))
	io.WriteString(c, "hi\n")
	if got, err := bufio.NewReader(c).ReadString('\n'); err != nil || got != "hi\n" {
		t.Fatalf("echo: %q, %v", got, err)
	}

	load := netlabtest.StartLoad(t, d.Client, netlabtest.LoadOptions{Network: "tcp4", Address: addr, Echo: 2, Stream: 1,
		Every: 5 * time.Millisecond, Pad: 100})
	load.Flowing(t, "through the router")
	if echo, stream := load.TakeLongest(); echo <= 0 || stream <= 0 {
		t.Errorf("longest pauses %v, %v: want both measured", echo, stream)
	}
	if broken := load.End(); len(broken) != 0 {
		t.Fatalf("connections broke: %v", broken)
	}

	// A server that resets its connections: every one is reported.
	l2 := netlabtest.Listen(t, d.Servers[0], nil, "tcp4", netip.AddrPortFrom(vip, 81).String())
	kill := make(chan struct{})
	netlabtest.Serve(t, l2, func(c net.Conn) {
		go io.Copy(c, c)
		<-kill
		c.(*net.TCPConn).SetLinger(0) // a reset, at once
	})
	load = netlabtest.StartLoad(t, d.Client, netlabtest.LoadOptions{Network: "tcp4", Address: netip.AddrPortFrom(vip, 81).String(), Echo: 3,
		Every: 5 * time.Millisecond})
	load.Flowing(t, "before the reset")
	close(kill)
	for deadline := time.Now().Add(netlabtest.AnswerWithin); time.Now().Before(deadline) && len(load.Failures()) < 3; {
		time.Sleep(50 * time.Millisecond)
	}
	broken := load.End()
	if len(broken) != 3 || !strings.Contains(broken[0], "connection") {
		t.Fatalf("after the server reset its connections: %v, want 3 broken", broken)
	}
}
