package dataplane

import (
	"encoding/hex"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestEchoPolicies: an echo request to a VIP is answered, passed or
// dropped as the instance's policy says, switched on a live mux by
// reloading the instance, each counted.
func TestEchoPolicies(t *testing.T) {
	v, m := loadVectorMux(t)
	b := newMuxBench(t, &v.Mux)
	echo, _ := hex.DecodeString(caseNamed(t, v, "echo request answered by the mux"))
	table, err := v.Mux.Table()
	must(t, err)
	for _, c := range []struct {
		policy          forwarding.EchoPolicy
		action, counter string
	}{
		{"", "drop", "drop_icmp_echo"}, // the default: as before the policy existed
		{forwarding.EchoDrop, "drop", "drop_icmp_echo"},
		{forwarding.EchoPass, "pass", "pass_icmp_echo"},
		{forwarding.EchoAnswer, "tx", "icmp_echo_answered"},
	} {
		cfg := v.Mux.Instance
		cfg.ICMPEcho = c.policy
		must(t, m.SetInstance(cfg, table))
		before, err := m.Counters()
		must(t, err)
		action, out := runXDP(t, b.ns, b.ifindex, m.Program(), echo)
		after, err := m.Counters()
		must(t, err)
		if action != c.action || after[c.counter]-before[c.counter] != 1 {
			t.Errorf("policy %q: %s, %s moved by %d; want %s, one", c.policy, action, c.counter, after[c.counter]-before[c.counter], c.action)
		}
		if c.action == "tx" && (len(out) < 35 || out[34] != 0) {
			t.Errorf("policy %q: the reply is not an echo reply: %x", c.policy, out)
		}
	}
}

// TestPortSetRewrite: a VIP with more ranges than its record holds reads
// them from a port set; changing its ranges writes a new set before the
// record names it, and the old ranges stop forwarding at once.
func TestPortSetRewrite(t *testing.T) {
	v, m := loadVectorMux(t)
	b := newMuxBench(t, &v.Mux)
	in := caseNamed(t, v, "second vip: udp in its overflow port set") // UDP 9350
	if a, _ := forwardedBy(t, b, m, in); a != "tx" && a != "redirect" {
		t.Fatalf("UDP 9350 on the second VIP: %s, want forwarded", a)
	}
	table, err := v.Mux.Table()
	must(t, err)
	cfg := v.Mux.Instance
	cfg.Services = append([]forwarding.Service(nil), cfg.Services...)
	last := len(cfg.Services) - 1
	s := cfg.Services[last]
	s.Ports = forwarding.PortList{{Low: 9000, High: 9001}, {Low: 9100, High: 9100}, {Low: 9200, High: 9200}, {Low: 9500, High: 9600}}
	cfg.Services[last] = s
	must(t, m.SetInstance(cfg, table))
	if a, _ := forwardedBy(t, b, m, in); a != "drop" {
		t.Fatalf("UDP 9350 after its range left the VIP: %s, want drop", a)
	}
	for i := 0; i < 3; i++ { // sets are reused, never-used ones first
		s.Ports[3].High = 9601 + uint16(i)
		cfg.Services[last] = s
		must(t, m.SetInstance(cfg, table))
	}
	if m.ports.next < 2 || len(m.ports.byVIP) != 1 {
		t.Errorf("port sets: %d handed out, %d VIPs hold one; want ≥ 2 and 1", m.ports.next, len(m.ports.byVIP))
	}
}
