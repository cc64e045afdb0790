package agentd

import (
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestAgentSetupIPv6: an agent serving an IPv4 and an IPv6 VIP takes its
// IPv6 address from the interface, puts the IPv6 VIP on loopback as a
// /128, advertises VIP:server-id to MPTCP clients for both, turns IPv6
// forwarding on (chaining looks next hops up with bpf_fib_lookup
// AF_INET6), and Close undoes all of it. An IPv6 VIP on a server without a
// global IPv6 address is refused, naming the setting to give.
func TestAgentSetupIPv6(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "agentd6").Pair("srv", netip.MustParsePrefix("198.18.0.10/24"), "net", netip.MustParsePrefix("198.18.0.1/24"), 0)
	cfg := config.Agent{Interface: "eth0", ServerID: 1030,
		Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24"), netip.MustParsePrefix("2001:db8::/64")},
		VIPs:    []config.AgentVIP{{VIP: netip.MustParseAddr("198.18.100.1"), Buckets: 100}, {VIP: netip.MustParseAddr("2001:db8:100::1"), Buckets: 100}}}
	err := ns.Do(func() error {
		d, err := Start(cfg, testOptions(t))
		if err == nil {
			d.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "interface eth0 has no global IPv6 address: give address6 (--addr6)") {
		t.Fatalf("IPv6 VIP without an IPv6 address: %v", err)
	}
	if err := ns.AddAddr("eth0", netip.MustParsePrefix("2001:db8::10/64")); err != nil {
		t.Fatal(err)
	}
	sysctl := func(key string) string {
		out, err := ns.Run("sysctl", "-n", key)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	before := sysctl("net.ipv6.conf.eth0.forwarding")
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
	if d.cfg.Address6 != netip.MustParseAddr("2001:db8::10") {
		t.Errorf("address6 %v", d.cfg.Address6)
	}
	// The controller probes each DIP at its own address: the API answers
	// on both (and on neither VIP).
	for addr, want := range map[string]bool{"198.18.0.10:9300": true, "[2001:db8::10]:9300": true, "[2001:db8:100::1]:9300": false} {
		err := ns.Do(func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		})
		if (err == nil) != want {
			t.Errorf("agent API at %s: %v, want reachable %v", addr, err, want)
		}
	}
	show := func(args ...string) string {
		out, err := ns.Run(args[0], args[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if out := show("ip", "-6", "addr", "show", "lo"); !strings.Contains(out, "2001:db8:100::1/128") {
		t.Errorf("IPv6 VIP not on lo as a /128:\n%s", out)
	}
	if out := show("ip", "mptcp", "endpoint", "show"); !strings.Contains(out, "2001:db8:100::1 port 1030") || !strings.Contains(out, "198.18.100.1 port 1030") {
		t.Errorf("MPTCP endpoints:\n%s", out)
	}
	if sysctl("net.ipv6.conf.eth0.forwarding") != "1" {
		t.Error("IPv6 forwarding off on eth0")
	}
	for ts, warn := range map[string]bool{"1": true, "0": false} {
		if err := ns.Sysctl("net.ipv4.tcp_timestamps", ts); err != nil {
			t.Fatal(err)
		}
		var w string
		ns.Do(func() error { w = mptcpIPv6Warning(cfg); return nil })
		if (w != "") != warn {
			t.Errorf("tcp_timestamps %s: warning %q", ts, w)
		}
	}
	if err := ns.Do(d.Close); err != nil {
		t.Fatal(err)
	}
	closed = true
	if out := show("ip", "-6", "addr", "show", "lo"); strings.Contains(out, "2001:db8:100::1") {
		t.Errorf("IPv6 VIP left on lo:\n%s", out)
	}
	if out := show("ip", "mptcp", "endpoint", "show"); strings.Contains(out, "port 1030") {
		t.Errorf("MPTCP endpoints left:\n%s", out)
	}
	if got := sysctl("net.ipv6.conf.eth0.forwarding"); got != before {
		t.Errorf("IPv6 forwarding %s after Close, was %s", got, before)
	}
}

// TestAgentIPv6Only: a server with only an IPv6 address serves an IPv6
// VIP; one serving an IPv4 VIP without an IPv4 address is refused.
func TestAgentIPv6Only(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "agentd6only").Pair("srv", netip.MustParsePrefix("2001:db8::10/64"), "net", netip.MustParsePrefix("2001:db8::1/64"), 0)
	cfg := config.Agent{Interface: "eth0", ServerID: 1030, Trusted: []netip.Prefix{netip.MustParsePrefix("2001:db8::/64")},
		VIPs: []config.AgentVIP{{VIP: netip.MustParseAddr("2001:db8:100::1"), Buckets: 100}}}
	var d *Daemon
	if err := ns.Do(func() (err error) { d, err = Start(cfg, testOptions(t)); return err }); err != nil {
		t.Fatal(err)
	}
	if d.Address().IsValid() || d.cfg.Address6 != netip.MustParseAddr("2001:db8::10") {
		t.Errorf("addresses %v, %v", d.Address(), d.cfg.Address6)
	}
	if err := ns.Do(d.Close); err != nil {
		t.Fatal(err)
	}
	cfg.VIPs = append(cfg.VIPs, config.AgentVIP{VIP: netip.MustParseAddr("198.18.100.1"), Buckets: 100})
	cfg.Trusted = append(cfg.Trusted, netip.MustParsePrefix("198.18.0.0/24"))
	err := ns.Do(func() error {
		d, err := Start(cfg, testOptions(t))
		if err == nil {
			d.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "no IPv4 address") {
		t.Fatalf("IPv4 VIP on an IPv6-only server: %v", err)
	}
}
