package agentd

import (
	"net/netip"
	"os"
	"strings"
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
	vip := netip.MustParseAddr("198.18.100.1")
	client, muxNS, srv := dsrNet(t, "agentrs", vip)

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

	load := netlabtest.StartLoad(t, client, netlabtest.LoadOptions{Network: "tcp4", Address: netip.AddrPortFrom(vip, 80).String(),
		Echo: 4, Every: 20 * time.Millisecond, Stall: 15 * time.Second, Within: 30 * time.Second})
	load.Flowing(t, "before the agent exits")
	must(t, first.Abandon())
	load.Flowing(t, "with no agent process")
	var second *Daemon
	must(t, srv.Do(func() (err error) { second, err = Start(cfg, opts); return err }))
	load.Flowing(t, "after the new agent took over")
	if failures := load.End(); len(failures) > 0 {
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
	netlabtest.ServeEcho(t, netlabtest.Listen(t, srv, nil, "tcp4", netip.AddrPortFrom(vip, 80).String()))
	return d, cfg, opts
}

// dsrNet is client — bridge — mux (198.18.0.1), server (198.18.0.10), the
// client routing vip at the mux.
func dsrNet(t *testing.T, tag string, vip netip.Addr) (client, mux, srv *netlab.Namespace) {
	d := netlabtest.NewRig(t, tag).DSR(netlabtest.DSRLayout{VIP: vip, Client: netip.MustParsePrefix("198.18.0.100/24"),
		Muxes: []netip.Prefix{netip.MustParsePrefix("198.18.0.1/24")}, Servers: []netip.Prefix{netip.MustParsePrefix("198.18.0.10/24")}, MTU: 1600})
	return d.Client, d.Muxes[0], d.Servers[0]
}
