package agentapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// A server whose link is shaped to 40 Mbit/s by tbf reports 40 Mbit/s of
// capacity: nearly all of it available while idle, little while a client
// downloads as fast as it can; an agent without an interface answers 404.
func TestCapacityTbf(t *testing.T) {
	srv, cli := netlabtest.NewRig(t, "agentcap").Pair("srv", netip.PrefixFrom(dip, 24), "cli", netip.PrefixFrom(outside, 24), 0)
	if out, err := srv.Run("tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "40mbit", "burst", "32kb", "latency", "50ms"); err != nil {
		t.Fatalf("tbf: %v %s", err, out)
	}
	var e, plain *Endpoint
	if err := srv.Do(func() (err error) {
		if e, err = Serve(dip.String()+":0", Options{VIPs: []netip.Addr{vip}, Capacity: &CapacityOptions{Iface: "eth0"}}); err != nil {
			return err
		}
		plain, err = Serve(dip.String()+":0", Options{VIPs: []netip.Addr{vip}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close(); plain.Close() })
	api := netip.MustParseAddrPort(e.Addr().String())
	c := clientIn(t, cli)

	ask := func() *CapacityReport {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		rep, err := c.Capacity(ctx, api)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	idle := ask()
	if idle.NICRate != 40e6 || idle.Capacity != 40e6 || idle.Available < 35e6 {
		t.Fatalf("idle: %+v", idle)
	}

	// A bulk sender on the server, a reader on the client, 2 s at most.
	var ln net.Listener
	if err := srv.Do(func() (err error) { ln, err = net.Listen("tcp4", dip.String()+":5001"); return err }); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		buf := make([]byte, 64<<10)
		conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		for {
			if _, err := conn.Write(buf); err != nil {
				return
			}
		}
	}()
	var conn net.Conn
	if err := cli.Do(func() (err error) { conn, err = net.Dial("tcp4", dip.String()+":5001"); return err }); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	go io.Copy(io.Discard, conn)
	time.Sleep(700 * time.Millisecond)
	busy := ask()
	if busy.TxRate < 25e6 || busy.Available > 15e6 {
		t.Fatalf("while sending at the shaped rate: %+v", busy)
	}
	t.Logf("idle %+v; busy %+v", idle, busy)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Capacity(ctx, netip.MustParseAddrPort(plain.Addr().String())); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("agent without an interface: %v, want 404", err)
	}
}

// clientIn is a client whose connections are made in ns.
func clientIn(t *testing.T, ns *netlab.Namespace) *Client {
	t.Helper()
	l := &serverLab{cli: ns}
	return &Client{HTTP: &http.Client{Transport: &http.Transport{DialContext: l.dialCli}}}
}
