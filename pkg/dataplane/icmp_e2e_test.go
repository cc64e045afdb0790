package dataplane

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

var (
	e2eFar       = netip.MustParseAddr("198.18.1.100") // a client behind a router
	e2eRouterIn  = netip.MustParseAddr("198.18.0.200") // the router on the fabric
	e2eRouterOut = netip.MustParseAddr("198.18.1.1")
)

const (
	e2eNarrowMTU = 1000 // the router's route to the far client
	e2eBulkPort  = 8080
	e2eBulkSize  = 256 << 10
)

// addFarClient puts a client behind a router whose route to it has a
// locked MTU of 1000 (a narrower link on the way back, as on the
// Internet): the client's MSS says 1460, so the servers' full-size replies
// (DSR, from the VIP) do not fit and the router answers them with ICMP
// frag needed, addressed to the VIP — which routes to the mux.
func (e *e2eNet) addFarClient(t *testing.T) *netlab.Namespace {
	router, far := e.rig.Namespace("router"), e.rig.Namespace("far")
	e.rig.Attach(router, netip.PrefixFrom(e2eRouterIn, 24), 1600)
	e.rig.Link(far, "eth0", netip.PrefixFrom(e2eFar, 24), router, "eth1", netip.PrefixFrom(e2eRouterOut, 24), 0)
	must(t, router.Sysctl("net.ipv4.ip_forward", "1"))
	for _, c := range [][]string{
		{"ip", "route", "add", e2eVIP.String() + "/32", "via", e2eMux.String()},
		{"ip", "route", "replace", "198.18.1.0/24", "dev", "eth1", "mtu", "lock", fmt.Sprint(e2eNarrowMTU)},
	} {
		_, err := router.Run(c[0], c[1:]...)
		must(t, err)
	}
	for _, dev := range []string{"eth0", "eth1"} {
		must(t, router.DisableTxChecksum(dev))
	}
	must(t, far.DisableTxChecksum("eth0"))
	_, err := far.Run("ip", "route", "add", "default", "via", e2eRouterOut.String())
	must(t, err)
	for _, s := range e.servers {
		_, err := s.Run("ip", "route", "add", "198.18.1.0/24", "via", e2eRouterIn.String())
		must(t, err)
	}
	return far
}

// serveBulk writes e2eBulkSize bytes to every connection on VIP:8080
// once the client sent a byte.
func serveBulk(t *testing.T, ns *netlab.Namespace) {
	l := netlabtest.Listen(t, ns, nil, "tcp4", netip.AddrPortFrom(e2eVIP, e2eBulkPort).String())
	netlabtest.Serve(t, l, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != nil {
			return
		}
		c.Write(make([]byte, e2eBulkSize))
	})
}

// TestEndToEndICMPFragNeeded: a client behind a narrow link downloads from
// the VIP. The server's full-size segments meet the narrow link; the router
// sends "fragmentation needed" to the VIP; the mux steers it as the quoted
// connection's flow — here after a bucket move, so the new owner's agent
// daisy-chains it to the server holding the connection — whose kernel
// lowers its path MTU to the client and resends smaller segments: the
// download completes. (Before issue 17 the mux dropped the ICMP and the
// download stalled: a PMTU black hole.)
func TestEndToEndICMPFragNeeded(t *testing.T) {
	e := newE2EWith(t, e2eConfig{strategy: forwarding.StrategyBeamer, muxes: 1, table: allToA, instance: func(in *forwarding.Instance) {
		in.Services = []forwarding.Service{{Protocol: forwarding.TCP, Ports: forwarding.PortList{{Low: e2eBulkPort, High: e2eBulkPort}}}}
		in.ServerIDRange = &forwarding.ServerIDRange{PortRange: forwarding.PortRange{Low: 1025, High: 2047}}
		in.ICMPEcho = forwarding.EchoAnswer
	}})
	far := e.addFarClient(t)
	for _, ns := range e.servers {
		serveBulk(t, ns)
	}
	// The connection is opened on A, then its bucket moves to B before A
	// sends the large replies: the frag needed reaches B first.
	c := netlabtest.Dial(t, far, nil, "tcp4", netip.AddrPortFrom(e2eVIP, e2eBulkPort).String())
	defer c.Close()
	e.moveAll(t, "a", "b", time.Now())
	c.SetDeadline(time.Now().Add(15 * time.Second))
	if _, err := c.Write([]byte("g")); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, c)
	if err != nil || n != e2eBulkSize {
		t.Fatalf("download through the narrow link: %d of %d bytes, %v (path MTU discovery black-holed?)", n, e2eBulkSize, err)
	}
	mc, err := e.mux.Counters()
	must(t, err)
	if mc["fwd_icmp_frag_needed"] == 0 {
		t.Errorf("the mux steered no frag needed: %v", mc)
	}
	if e.counter(t, "b", "icmp_frag_needed") == 0 || e.counter(t, "b", "chained") == 0 {
		t.Errorf("server B (the bucket's new owner) did not chain the frag needed on to A")
	}
	if e.counter(t, "a", "icmp_frag_needed") == 0 {
		t.Errorf("server A's agent saw no frag needed")
	}
	out, err := e.servers["a"].Run("ip", "route", "get", e2eFar.String())
	must(t, err)
	if !strings.Contains(out, fmt.Sprintf("mtu %d", e2eNarrowMTU)) {
		t.Errorf("server A's path MTU to the client did not adapt: %q", out)
	}

	// Echo requests to the VIP are answered by the mux (policy answer).
	if err := ping(far, e2eVIP); err != nil {
		t.Errorf("ping to the VIP: %v", err)
	}
	mc, err = e.mux.Counters()
	must(t, err)
	if mc["icmp_echo_answered"] == 0 {
		t.Errorf("the mux answered no echo request: %v", mc)
	}
}

// ping sends one echo request from ns to dst over a raw ICMP socket and
// waits up to two seconds for its reply.
func ping(ns *netlab.Namespace, dst netip.Addr) error {
	return ns.Do(func() error {
		c, err := net.ListenPacket("ip4:icmp", "0.0.0.0")
		if err != nil {
			return err
		}
		defer c.Close()
		req := []byte{8, 0, 0, 0, 0xbe, 0xef, 0, 1, 'b', 'e', 'a', 'm', 'e', 'r'}
		sum := wire.Checksum(req)
		req[2], req[3] = byte(sum>>8), byte(sum)
		if _, err := c.WriteTo(req, &net.IPAddr{IP: net.IP(dst.AsSlice())}); err != nil {
			return err
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 1500)
		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return err
			}
			if from.String() == dst.String() && n >= len(req) && buf[0] == 0 && buf[4] == 0xbe && buf[5] == 0xef &&
				string(buf[8:n]) == "beamer" && wire.Checksum(buf[:n]) == 0 {
				return nil
			}
		}
	})
}
