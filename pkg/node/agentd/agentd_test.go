package agentd

import (
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// TestAgentSetup starts the daemon inside a server namespace and checks what
// it sets up — VIP on loopback, ARP sysctls, tc program, MPTCP endpoint — and
// that Close undoes it.
func TestAgentSetup(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "agentd").Pair("srv", netip.MustParsePrefix("198.18.0.10/24"), "net", netip.MustParsePrefix("198.18.0.1/24"), 0)
	cfg := config.Agent{Interface: "eth0", ServerID: 1030, Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
		VIPs: []config.AgentVIP{{VIP: netip.MustParseAddr("198.18.100.1"), Buckets: 100}}}
	var d *Daemon
	if err := ns.Do(func() (err error) { d, err = Start(cfg, testOptions(t)); return err }); err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			ns.Do(d.Close)
		}
	}()
	if d.Address() != netip.MustParseAddr("198.18.0.10") {
		t.Errorf("address %v", d.Address())
	}
	check := func(want bool, what string, args ...string) {
		t.Helper()
		out, err := ns.Run(args[0], args[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range strings.Split(what, "|") {
			if strings.Contains(out, w) != want {
				t.Errorf("%s: %q present=%v, want %v:\n%s", strings.Join(args, " "), w, !want, want, out)
			}
		}
	}
	check(true, "198.18.100.1/32", "ip", "addr", "show", "lo")
	check(true, "198.18.100.1 port 1030|signal", "ip", "mptcp", "endpoint", "show")
	attached := func() int {
		var n int
		ns.Do(func() error {
			ifi, err := net.InterfaceByName("eth0")
			if err != nil {
				return err
			}
			r, err := link.QueryPrograms(link.QueryOptions{Target: ifi.Index, Attach: ebpf.AttachTCXIngress})
			if err == nil {
				n = len(r.Programs)
			}
			return err
		})
		return n
	}
	if n := attached(); n != 1 {
		t.Errorf("%d programs at eth0's tc ingress, want the agent", n)
	}
	check(true, "1", "sysctl", "-n", "net.ipv4.conf.all.arp_ignore")
	checkAPI(t, ns, d)
	if err := ns.Do(d.Close); err != nil {
		t.Fatal(err)
	}
	closed = true
	check(false, "198.18.100.1", "ip", "addr", "show", "lo")
	check(false, "port 1030", "ip", "mptcp", "endpoint", "show")
	if n := attached(); n != 0 {
		t.Errorf("%d programs left at eth0's tc ingress", n)
	}
}
