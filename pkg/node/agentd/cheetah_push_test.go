package agentd

import (
	"context"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/node/nodeauth"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Keys reach an agent without hand configuration: the controller pushes
// them (PUT /v1/cheetah). The agent takes them only from the controllers'
// prefix and only for its own server id, attaches the cookie writer at
// once, answers with its load, keeps them across a hitless restart (pinned
// map) and forgets them on a stop.
func TestAgentCheetahKeyPush(t *testing.T) {
	ns, peer := netlabtest.NewRig(t, "agentpush").Pair("srv", netip.MustParsePrefix("198.18.0.10/24"), "net", netip.MustParsePrefix("198.18.0.1/24"), 0)
	for k, v := range originalSysctls {
		must(t, ns.Sysctl(k, v))
	}
	opts := testOptions(t)
	cfg := lifecycleConfig()
	cfg.API = "198.18.0.10:9300"
	cfg.Controllers = []netip.Prefix{netip.MustParsePrefix("198.18.0.1/32")}
	cfg.VIPs[0].Strategy = forwarding.StrategyCheetah // agent --cheetah
	vip := cfg.VIPs[0].VIP
	agent := netip.MustParseAddrPort("198.18.0.10:9300")
	keys := cookie.Keys{Current: 1, Keys: [2]cookie.Key{{1, 2, 3, 4}, {5, 6, 7, 8}}}
	egress := func() int { return egressPrograms(ns) }
	push := func(from interface{ Do(func() error) error }, p agentapi.CheetahPush) (*agentapi.CheetahReport, error) {
		// The connection is opened inside the caller's namespace (a socket
		// stays in the namespace it was made in).
		c := &agentapi.Client{HTTP: &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
			DialContext: func(ctx context.Context, n, addr string) (conn net.Conn, err error) {
				err = from.Do(func() error { conn, err = (&net.Dialer{}).DialContext(ctx, n, addr); return err })
				return conn, err
			}}}}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		return c.PushCheetah(ctx, agent, p)
	}
	start := func() *Daemon {
		var d *Daemon
		must(t, ns.Do(func() (err error) { d, err = Start(cfg, opts); return err }))
		return d
	}
	d := start()
	if n := egress(); n != 0 {
		t.Fatalf("%d programs at egress before any key", n)
	}
	if _, err := push(ns, agentapi.CheetahPush{VIP: vip, ID: 1030, Keys: keys}); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("push from outside the controllers' prefix: %v, want 403", err)
	}
	if _, err := push(peer, agentapi.CheetahPush{VIP: vip, ID: 1031, Keys: keys}); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("push for another server id: %v, want 409", err)
	}
	if egress() != 0 {
		t.Fatal("a refused push attached the cookie writer")
	}
	rep, err := push(peer, agentapi.CheetahPush{VIP: vip, ID: 1030, Keys: keys})
	if err != nil || rep.KeyID != 1 || rep.Connections != 0 {
		t.Fatalf("push: %+v, %v", rep, err)
	}
	if n := egress(); n != 1 {
		t.Fatalf("%d programs at egress after the push, want the cookie writer", n)
	}
	have := func(d *Daemon) cookie.Keys {
		vs, err := cheetah.VIPs(d.Agent())
		must(t, err)
		if len(vs) != 1 || vs[0].VIP != vip || vs[0].ID != 1030 {
			t.Fatalf("agent's cheetah VIPs %+v", vs)
		}
		return vs[0].Keys
	}
	if k := have(d); k != keys {
		t.Fatalf("agent has %+v, pushed %+v", k, keys)
	}
	// Hitless restart: the next agent writes cookies with the pushed keys
	// from its first packet, before any push.
	must(t, d.Abandon())
	d = start()
	if k := have(d); k != keys || egress() != 1 {
		t.Fatalf("after a hitless restart the agent has %+v with %d egress programs", k, egress())
	}
	must(t, ns.Do(d.Close))
	if n := egress(); n != 0 {
		t.Fatalf("%d programs at egress after the stop", n)
	}
	d = start()
	if vs, err := cheetah.VIPs(d.Agent()); err != nil || len(vs) != 0 || egress() != 0 {
		t.Fatalf("after a stop and a start the agent still has keys %+v (%v)", vs, err)
	}
	must(t, ns.Do(d.Close))
	checkNoLeftovers(t, ns, opts)
}

// A key push for a VIP that is not a Cheetah VIP of the agent (a Beamer
// VIP) is refused even from the controller's certificate over the agent
// API's mutual TLS: 403, no key stored, no cookie writer attached, and
// direct connections to the VIP answer before and after as they did.
func TestAgentCheetahPushRefusedForBeamerVIP(t *testing.T) {
	ns, peer := netlabtest.NewRig(t, "agentbeamerpush").Pair("srv", netip.MustParsePrefix("198.18.0.10/24"), "net", netip.MustParsePrefix("198.18.0.1/24"), 0)
	for k, v := range originalSysctls {
		must(t, ns.Sysctl(k, v))
	}
	_, err := peer.Run("ip", "route", "add", "198.18.100.1/32", "via", "198.18.0.10")
	must(t, err)
	certs := t.TempDir()
	must(t, nodeauth.Issue(certs, "127.0.0.1", "ctl=controller", "agent1=agent@198.18.0.10"))
	opts := testOptions(t)
	opts.APIInsecure = false
	opts.APITLS, err = nodeauth.ServerConfig(nodeauth.FilesIn(certs, "agent1"), nodeauth.RoleAgent)
	must(t, err)
	cfg := lifecycleConfig() // a Beamer VIP: no --cheetah, no keys
	cfg.API = "198.18.0.10:9300"
	cfg.Controllers = []netip.Prefix{netip.MustParsePrefix("198.18.0.1/32")}
	vip := cfg.VIPs[0].VIP
	var d *Daemon
	must(t, ns.Do(func() (err error) { d, err = Start(cfg, opts); return err }))
	defer func() { must(t, ns.Do(d.Close)) }()
	// The service, bound to the VIP, answers clients directly.
	var svc net.Listener
	must(t, ns.Do(func() (err error) { svc, err = net.Listen("tcp4", vip.String()+":80"); return err }))
	defer svc.Close()
	go func() {
		for {
			c, err := svc.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	direct := func() error {
		return peer.Do(func() error {
			c, err := net.DialTimeout("tcp4", vip.String()+":80", 10*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			b := make([]byte, 6)
			_, err = io.ReadFull(c, b)
			return err
		})
	}
	for i := range 2 {
		if err := direct(); err != nil {
			t.Fatalf("direct connection %d before the push: %v", i, err)
		}
	}
	cc, err := nodeauth.ClientConfig(nodeauth.FilesIn(certs, "ctl"))
	must(t, err)
	c := &agentapi.Client{Scheme: "https", HTTP: &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: cc,
		DialContext: func(ctx context.Context, n, addr string) (conn net.Conn, err error) {
			err = peer.Do(func() error { conn, err = (&net.Dialer{}).DialContext(ctx, n, addr); return err })
			return conn, err
		}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	keys := cookie.Keys{Keys: [2]cookie.Key{{1, 2, 3, 4}, {5, 6, 7, 8}}}
	_, err = c.PushCheetah(ctx, netip.MustParseAddrPort("198.18.0.10:9300"), agentapi.CheetahPush{VIP: vip, ID: 1030, Keys: keys})
	if err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "not a cheetah VIP") {
		t.Fatalf("push for a Beamer VIP: %v, want 403 not a cheetah VIP", err)
	}
	if vs, err := cheetah.VIPs(d.Agent()); err != nil || len(vs) != 0 {
		t.Fatalf("after the refused push the agent has cheetah VIPs %+v (%v)", vs, err)
	}
	n := 0
	must(t, ns.Do(func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		r, err := link.QueryPrograms(link.QueryOptions{Target: ifi.Index, Attach: ebpf.AttachTCXEgress})
		if err == nil {
			n = len(r.Programs)
		}
		return err
	}))
	if n != 0 {
		t.Fatalf("%d programs at egress after a refused push", n)
	}
	for i := range 2 {
		if err := direct(); err != nil {
			t.Fatalf("direct connection %d after the refused push: %v", i, err)
		}
	}
}
