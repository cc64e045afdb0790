package agentd

import (
	"net"
	"testing"

	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// An agent serving a Cheetah VIP attaches the cookie writer at eth0's
// egress; across a hitless restart (Abandon, then a new agent) exactly one
// writer stays attached, the new agent's; a stop removes it with the rest.
func TestAgentCheetahEgressLifecycle(t *testing.T) {
	ns := agentLab(t)
	opts := testOptions(t)
	cfg := lifecycleConfig()
	cfg.VIPs[0].Cheetah = &cookie.Keys{Keys: [2]cookie.Key{{1, 2, 3, 4}, {5, 6, 7, 8}}}
	egress := func() int { return egressPrograms(ns) }
	var first, second *Daemon
	if err := ns.Do(func() (err error) { first, err = Start(cfg, opts); return err }); err != nil {
		t.Fatal(err)
	}
	if n := egress(); n != 1 {
		t.Fatalf("%d programs at eth0's egress, want the cookie writer", n)
	}
	must(t, first.Abandon())
	if n := egress(); n != 1 {
		t.Fatalf("%d programs at egress while the agent is away, want its pinned writer", n)
	}
	if err := ns.Do(func() (err error) { second, err = Start(cfg, opts); return err }); err != nil {
		t.Fatal(err)
	}
	if n := egress(); n != 1 {
		t.Fatalf("%d programs at egress after the restart, want exactly one", n)
	}
	if err := ns.Do(second.Close); err != nil {
		t.Fatal(err)
	}
	if n := egress(); n != 0 {
		t.Fatalf("%d programs left at egress after the stop", n)
	}
	checkNoLeftovers(t, ns, opts)
}

// egressPrograms counts the tcx programs at eth0's egress in ns (the
// Cheetah cookie writer is the only one an agent attaches there).
func egressPrograms(ns *netlab.Namespace) int {
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
