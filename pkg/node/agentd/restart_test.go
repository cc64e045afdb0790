package agentd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestAgentRestartUnderTraffic: TCP connections reach a server through a
// mux and the server's agent; the agent exits without undoing anything
// (a crash, or any stop of `beamer agent`), its pinned tc program keeps
// decapsulating, a new agent takes the pinned link over, and no connection
// notices (issue 11, lifecycle: hitless restart of the tc program).
func TestAgentRestartUnderTraffic(t *testing.T) {
	lab := netlabtest.New(t, "agentrs")
	ns := func(name string) *netlab.Namespace {
		n, err := lab.Namespace(name)
		must(t, err)
		return n
	}
	fabric, client, muxNS, srv := ns("fabric"), ns("client"), ns("mux"), ns("srv")
	vip := netip.MustParseAddr("198.18.100.1")
	must(t, lab.Veth(client, "eth0", netip.MustParsePrefix("198.18.0.100/24"), fabric, "c0", netip.Prefix{}, 0))
	must(t, lab.Veth(muxNS, "eth0", netip.MustParsePrefix("198.18.0.1/24"), fabric, "m0", netip.Prefix{}, 1600))
	must(t, lab.Veth(srv, "eth0", netip.MustParsePrefix("198.18.0.10/24"), fabric, "s0", netip.Prefix{}, 1600))
	must(t, fabric.Bridge("br0", "c0", "m0", "s0"))
	pass, err := fabric.AttachXDPPass("m0")
	must(t, err)
	t.Cleanup(func() { pass.Close() })
	must(t, client.DisableTxChecksum("eth0"))
	_, err = client.Run("ip", "route", "add", vip.String()+"/32", "via", "198.18.0.1")
	must(t, err)

	// The mux, in this process.
	must(t, muxNS.Sysctl("net.ipv4.ip_forward", "1"))
	m, err := dataplane.LoadMux(dataplane.MuxOptions{Addr: netip.MustParseAddr("198.18.0.1")})
	must(t, err)
	t.Cleanup(func() { m.Close() })
	must(t, muxNS.Do(func() error {
		l, err := m.Attach("eth0", dataplane.XDPDriver)
		if err == nil {
			t.Cleanup(func() { l.Close() })
		}
		return err
	}))
	table := forwarding.NewTable(67)
	table.Generation = 1
	table.Servers[1030] = forwarding.Server{Addr: netip.MustParseAddr("198.18.0.10"), State: forwarding.Active}
	for i := range table.Buckets {
		table.Buckets[i] = forwarding.Bucket{Current: 1030}
	}
	must(t, m.SetInstance(forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{vip},
		PortLow: 80, PortHigh: 80, Buckets: 67, ChainWindow: forwarding.DefaultChainWindow}, table))
	must(t, dataplane.EnsureNeighbors(muxNS.Netlink(), []netip.Addr{netip.MustParseAddr("198.18.0.10")}))

	// The server: the agent daemon (VIP on lo, sysctls, pinned tc program)
	// and an echo service on VIP:80.
	first, cfg, opts := startEchoServer(t, srv, vip)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var failures []string
	exchanges := make([]int, 4)
	var cwg sync.WaitGroup
	for i := range exchanges {
		var c net.Conn
		d := net.Dialer{Timeout: 10 * time.Second}
		must(t, client.Do(func() (err error) { c, err = d.Dial("tcp4", netip.AddrPortFrom(vip, 80).String()); return err }))
		defer c.Close()
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			r := bufio.NewReader(c)
			for n := 0; ctx.Err() == nil; n++ {
				msg := fmt.Sprintf("conn %d msg %d\n", i, n)
				c.SetDeadline(time.Now().Add(10 * time.Second)) // a lost segment costs an RTO on a busy machine; a break still shows
				_, err := io.WriteString(c, msg)
				var got string
				if err == nil {
					got, err = r.ReadString('\n')
				}
				mu.Lock()
				if err != nil || got != msg {
					failures = append(failures, fmt.Sprintf("connection %d exchange %d: %v", i, n, err))
					mu.Unlock()
					return
				}
				exchanges[i]++
				mu.Unlock()
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	progress := func(what string) {
		t.Helper()
		mu.Lock()
		before := append([]int(nil), exchanges...)
		mu.Unlock()
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			mu.Lock()
			ok := true
			for i := range before {
				ok = ok && exchanges[i] >= before[i]+5
			}
			f := len(failures)
			mu.Unlock()
			if ok && f == 0 {
				return
			}
		}
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%s: connections stalled (before %v, now %v): %v", what, before, exchanges, failures)
	}
	progress("before the agent exits")
	must(t, first.Abandon())
	progress("with no agent process")
	var second *Daemon
	must(t, srv.Do(func() (err error) { second, err = Start(cfg, opts); return err }))
	progress("after the new agent took over")
	cancel()
	cwg.Wait()
	if len(failures) > 0 {
		t.Fatalf("connections broke: %v", failures)
	}
	must(t, srv.Do(second.Close))
	if out, _ := srv.Run("ip", "addr", "show", "lo"); strings.Contains(out, vip.String()) {
		t.Errorf("VIP left on lo after the clean exit:\n%s", out)
	}
}

// startEchoServer makes srv a server of vip (67 buckets, id 1030, trusting
// 198.18.0.0/24): the agent daemon with pins of its own, and an echo
// service on VIP:80. It returns the daemon, its configuration and its
// options (pin dir), to start its successor with.
func startEchoServer(t *testing.T, srv *netlab.Namespace, vip netip.Addr) (*Daemon, config.Agent, Options) {
	t.Helper()
	must(t, srv.Sysctl("net.ipv4.conf.all.rp_filter", "0"))
	must(t, srv.Sysctl("net.ipv4.conf.eth0.rp_filter", "0"))
	cfg := config.Agent{Interface: "eth0", ServerID: 1030, Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []config.AgentVIP{{VIP: vip, Buckets: 67}}, API: "off"}
	opts := testOptions(t)
	t.Cleanup(func() { os.RemoveAll(opts.PinDir) })
	var d *Daemon
	must(t, srv.Do(func() (err error) { d, err = Start(cfg, opts); return err }))
	var l net.Listener
	must(t, srv.Do(func() (err error) { l, err = net.Listen("tcp4", netip.AddrPortFrom(vip, 80).String()); return err }))
	netlabtest.Serve(t, l, func(c net.Conn) { io.Copy(c, c) })
	return d, cfg, opts
}
