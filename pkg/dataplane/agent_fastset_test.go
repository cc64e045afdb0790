package dataplane

import (
	"net/netip"
	"testing"
	"time"
)

// TestAgentVectorsOnMaps runs the agent's vectors (tc, XDP, GUE) again
// with the trusted prefixes and the VIPs left to the LPM trie and the hash
// map, as with more than agentFastSet of them: both ways decide alike.
func TestAgentVectorsOnMaps(t *testing.T) {
	agentFastSetsOff = true
	t.Cleanup(func() { agentFastSetsOff = false })
	t.Run("tc", TestAgentVectors)
	t.Run("xdp", TestAgentXDPVectors)
	t.Run("gue", TestGUEAgentVectors)
	t.Run("gue-xdp", TestGUEAgentXDPVectors)
}

// TestAgentXDPFastShape runs the XDP vectors (IP-in-IP and GUE) again with
// the fast path's whole-word reading of its most common packet turned off
// (bpf/include/agent_xdp_fast.h): the general path alone then decides
// every packet, and each way gets every vector's decision, output and
// counters, so the shortcut changes no verdict.
func TestAgentXDPFastShape(t *testing.T) {
	agentXDPFastShapeOff = true
	t.Cleanup(func() { agentXDPFastShapeOff = false })
	t.Run("xdp", TestAgentXDPVectors)
	t.Run("gue-xdp", TestGUEAgentXDPVectors)
}

// TestAgentFastSets checks the constants: prefixes in network order with
// their masks, VIP records with the slots and bucket bases configure
// gives them (IPv6 VIPs counted in both), and more than agentFastSet
// entries left to the maps.
func TestAgentFastSets(t *testing.T) {
	ip := netip.MustParseAddr
	spec, err := loadAgent()
	must(t, err)
	opts := AgentOptions{Addr: ip("198.18.0.11"),
		Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24"), netip.MustParsePrefix("2001:db8::/32"), netip.MustParsePrefix("10.1.2.3/32")},
		VIPs: []AgentVIP{{VIP: ip("198.18.100.1"), Buckets: 10, ChainWindow: time.Minute}, {VIP: ip("2001:db8::100"), Buckets: 20},
			{VIP: ip("198.18.100.2"), Buckets: 30}}}
	must(t, setAgentFastSets(spec, opts))
	var n uint32
	var nets, masks, addrs [agentFastSet]uint32
	var recs [agentFastSet]agentAgentVip
	get := func(name string, v any) {
		t.Helper()
		must(t, spec.Variables[name].Get(v))
	}
	get("trusted4_count", &n)
	get("trusted4_net", &nets)
	get("trusted4_mask", &masks)
	if n != 2 || nets[0] != beU32(ip("198.18.0.0")) || masks[0] != beU32(ip("255.255.255.0")) ||
		nets[1] != beU32(ip("10.1.2.3")) || masks[1] != beU32(ip("255.255.255.255")) {
		t.Errorf("trusted: %d %x %x", n, nets, masks)
	}
	get("vips4_count", &n)
	get("vips4_addr", &addrs)
	get("vips4_rec", &recs)
	want := agentAgentVip{Buckets: 30, BucketBase: 30, Slot: 2}
	if n != 2 || addrs[0] != beU32(ip("198.18.100.1")) || addrs[1] != beU32(ip("198.18.100.2")) || recs[1] != want || recs[0].Window != 60 {
		t.Errorf("VIPs: %d %x %+v", n, addrs, recs[:2])
	}

	spec, err = loadAgent()
	must(t, err)
	opts.Trusted, opts.VIPs = nil, nil
	for i := 0; i <= agentFastSet; i++ {
		opts.Trusted = append(opts.Trusted, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16))
		opts.VIPs = append(opts.VIPs, AgentVIP{VIP: netip.AddrFrom4([4]byte{198, 18, 100, byte(i)}), Buckets: 1})
	}
	must(t, setAgentFastSets(spec, opts))
	for _, name := range []string{"trusted4_count", "vips4_count"} {
		if get(name, &n); n != agentFastSet+1 {
			t.Errorf("%s = %d with %d entries, want %d (the maps decide)", name, n, agentFastSet+1, agentFastSet+1)
		}
	}
}
