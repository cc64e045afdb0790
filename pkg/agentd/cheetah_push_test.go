package agentd

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/agentapi"
	"github.com/beamer-lb/beamer/pkg/cheetah"
	"github.com/beamer-lb/beamer/pkg/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// Keys reach an agent without hand configuration: the controller pushes
// them (PUT /v1/cheetah). The agent takes them only from the controllers'
// prefix and only for its own server id, attaches the cookie writer at
// once, answers with its load, keeps them across a hitless restart (pinned
// map) and forgets them on a stop.
func TestAgentCheetahKeyPush(t *testing.T) {
	lab := netlabtest.New(t, "agentpush")
	ns, err := lab.Namespace("srv")
	must(t, err)
	peer, err := lab.Namespace("net")
	must(t, err)
	must(t, lab.Veth(ns, "eth0", netip.MustParsePrefix("198.18.0.10/24"), peer, "eth0", netip.MustParsePrefix("198.18.0.1/24"), 0))
	for k, v := range originalSysctls {
		must(t, ns.Sysctl(k, v))
	}
	opts := testOptions(t)
	cfg := lifecycleConfig()
	cfg.API = "198.18.0.10:9300"
	cfg.Controllers = []netip.Prefix{netip.MustParsePrefix("198.18.0.1/32")}
	vip := cfg.VIPs[0].VIP
	agent := netip.MustParseAddrPort("198.18.0.10:9300")
	keys := cheetah.Keys{Current: 1, Keys: [2]cheetah.Key{{1, 2, 3, 4}, {5, 6, 7, 8}}}
	egress := func() int {
		n := 0
		ns.Do(func() error {
			ifi, err := net.InterfaceByName("eth0")
			if err != nil {
				return err
			}
			r, err := link.QueryPrograms(link.QueryOptions{Target: ifi.Index, Attach: ebpf.AttachTCXEgress})
			if err == nil {
				n = len(r.Programs)
			}
			return err
		})
		return n
	}
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
	have := func(d *Daemon) cheetah.Keys {
		vs, err := d.Agent().CheetahVIPs()
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
	if vs, err := d.Agent().CheetahVIPs(); err != nil || len(vs) != 0 || egress() != 0 {
		t.Fatalf("after a stop and a start the agent still has keys %+v (%v)", vs, err)
	}
	must(t, ns.Do(d.Close))
	checkNoLeftovers(t, ns, opts)
}
