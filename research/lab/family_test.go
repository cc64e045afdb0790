package lab

import (
	"strings"
	"testing"
)

// TestAffinityIPv6: experiment 1 over IPv6 with MPTCP clients — clients
// connect to an IPv6 VIP whose route the router learned over BGP (IPv6
// unicast, ECMP over both muxes), muxes carry the packets in GUE over IPv6
// to IPv6 servers, each connection's secondary subflow to VIP:server-id
// comes up through the muxes, a server leaves and then a mux: Beamer
// breaks nothing, and the removed server's connections were daisy-chained
// over IPv6.
func TestAffinityIPv6(t *testing.T) {
	requireLab(t)
	r, err := runCI(t, "affinity", "beamer", func(p *Params) { p.Family, p.MPTCP = 6, true })
	if err != nil {
		t.Fatal(err)
	}
	summary(t, r)
	want := r.Parameters.Clients * r.Parameters.PerClient
	if r.Connections != want || r.Broken != 0 {
		t.Errorf("beamer over IPv6: %d of %d connections broken (%v), want 0 of %d", r.Broken, r.Connections, r.BrokenReasons, want)
	}
	if r.MuxCounters["fwd_ipv6"] == 0 {
		t.Errorf("no packet took the mux's IPv6 path (mux counters %v)", r.MuxCounters)
	}
	if r.ChainedPackets == 0 {
		t.Error("no packet was daisy-chained: the removed server's connections did not move")
	}
	if r.SubflowsExpected < r.Connections/2 || r.SubflowsEstablished < r.SubflowsExpected*95/100 || r.SubflowsMissing["join refused"] > 0 {
		t.Errorf("MPTCP over IPv6: %d of %d secondary subflows established (%d connections), missing: %v",
			r.SubflowsEstablished, r.SubflowsExpected, r.Connections, r.SubflowsMissing)
	}
	if r.MuxCounters["fwd_server_id"] == 0 {
		t.Error("no packet was forwarded by server id: the secondary subflows did not cross a mux")
	}
}

// TestFamilyChecks: an IPv6 lab refuses what it cannot run, saying why.
func TestFamilyChecks(t *testing.T) {
	for _, c := range []struct {
		p    func(*Params)
		want string
	}{
		{func(p *Params) { p.Family = 5 }, "family 5: want 4 or 6"},
		{func(p *Params) { p.Family, p.Strategy = 6, "maglev" }, `family 6: only strategy beamer forwards IPv6, not "maglev"`},
		{func(p *Params) { p.Family, p.UDPFlows = 6, 2 }, "family 6: the lab's UDP and QUIC flows are IPv4 only"},
		{func(p *Params) { p.Family, p.Encap = 6, "ipip" }, "family 6: IPv6 travels in GUE only"},
		{func(p *Params) { p.Family, p.FloodRate = 6, 1000 }, "family 6: the lab's SYN flood is IPv4 only"},
	} {
		p, err := DefaultParams("affinity", SizeCI, "beamer")
		if err != nil {
			t.Fatal(err)
		}
		c.p(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", p, err, c.want)
		}
	}
	if a := addr6(1, 0xfe).String(); a != "2001:db8:1::fe" || serverAddr6(3).String() != "2001:db8::13" || muxAddr6(0).String() != "2001:db8::1" {
		t.Errorf("IPv6 plan: router %s, server 3 %s, mux 0 %s", a, serverAddr6(3), muxAddr6(0))
	}
}
