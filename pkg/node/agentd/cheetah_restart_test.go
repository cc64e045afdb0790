package agentd

import (
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// Keys the agent holds (pushed by the controller, newer than its file's)
// survive a restart that changes the agent's
// VIP layout (another bucket count, a second VIP: a SIGHUP reload or a
// restart with a new file), so the next agent writes cookies from its
// first packet; an agent that serves no Cheetah VIP any more drops the
// pinned cookie writer (issue 28).
func TestAgentCheetahKeysSurviveLayoutChange(t *testing.T) {
	ns := agentLab(t)
	opts := testOptions(t)
	cfg := lifecycleConfig()
	vip := cfg.VIPs[0].VIP
	given := cookie.Keys{Keys: [2]cookie.Key{{9, 9, 9, 9}, {}}}
	keys := cookie.Keys{Current: 1, Keys: [2]cookie.Key{{1, 2, 3, 4}, {5, 6, 7, 8}}}
	start := func(c config.Agent) *Daemon {
		t.Helper()
		var d *Daemon
		must(t, ns.Do(func() (err error) { d, err = Start(c, opts); return err }))
		return d
	}
	egress := func() int { return egressPrograms(ns) }
	cfg.VIPs[0].Cheetah = &given
	d := start(cfg)
	// A push (however keys arrive, they land in the same map).
	must(t, cheetah.SetVIP(d.Agent(), cheetah.AgentVIP{VIP: vip, ID: 1030, Keys: keys}))
	must(t, d.Abandon())

	wider := lifecycleConfig()
	wider.VIPs[0].Buckets = 200
	wider.VIPs = append(wider.VIPs, config.AgentVIP{VIP: netip.MustParseAddr("198.18.100.2"), Buckets: 50})
	d = start(wider)
	vs, err := cheetah.VIPs(d.Agent())
	must(t, err)
	if len(vs) != 1 || vs[0].VIP != vip || vs[0].Keys != keys || vs[0].ID != 1030 {
		t.Fatalf("after a restart with another VIP layout the agent has keys %+v, want the pushed %+v for %v", vs, keys, vip)
	}
	if n := egress(); n != 1 {
		t.Fatalf("%d programs at egress after the restart, want the cookie writer", n)
	}
	must(t, d.Abandon())

	// The VIP left this server: its keys and writer go.
	other := lifecycleConfig()
	other.VIPs[0].VIP = netip.MustParseAddr("198.18.100.3")
	d = start(other)
	if vs, err := cheetah.VIPs(d.Agent()); err != nil || len(vs) != 0 {
		t.Fatalf("keys of a VIP no longer served: %+v (%v)", vs, err)
	}
	if n := egress(); n != 0 {
		t.Fatalf("%d programs at egress with no Cheetah VIP", n)
	}
	must(t, ns.Do(d.Close))
	checkNoLeftovers(t, ns, opts)
}
