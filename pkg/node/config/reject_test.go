package config

import (
	"net/netip"
	"strings"
	"testing"
)

// TestRejectionMessages: each bad static file is refused with exactly this
// message (after "PATH: "), the same words ctl and the controller use.
func TestRejectionMessages(t *testing.T) {
	second := `
  - name: api
    strategy: beamer
    vips: [198.18.100.2]
    port_low: 80
    port_high: 80
    buckets: 100
    servers:
      - {id: 1025, address: 198.18.0.10}
`
	mux := map[string]struct{ text, want string }{
		"empty file":     {"", "the file is empty: expected a YAML mapping (format: pkg/node/config)"},
		"only a comment": {"# nothing\n", "the file is empty: expected a YAML mapping (format: pkg/node/config)"},
		"broadcast VIP": {strings.Replace(goodMux, "198.18.100.1", "255.255.255.255", 1),
			`invalid instance configuration "web": VIP 255.255.255.255 is the broadcast address: a VIP must be a unicast IPv4 or IPv6 address`},
		"loopback VIP": {strings.Replace(goodMux, "198.18.100.1", "127.0.0.1", 1),
			`invalid instance configuration "web": VIP 127.0.0.1 is a loopback address (127.0.0.0/8): a VIP must be a unicast IPv4 or IPv6 address`},
		"multicast VIP": {strings.Replace(goodMux, "198.18.100.1", "224.0.0.1", 1),
			`invalid instance configuration "web": VIP 224.0.0.1 is a multicast address (224.0.0.0/4): a VIP must be a unicast IPv4 or IPv6 address`},
		"one bucket": {strings.Replace(goodMux, "buckets: 100", "buckets: 1", 1),
			`invalid instance configuration "web": bucket count 1 must be in 2–16777216 (B must exceed the number of DIPs; about 100 per DIP is a good size)`},
		"non-prime maglev": {strings.Replace(goodMux, "strategy: beamer", "strategy: maglev", 1),
			`invalid instance configuration "web": maglev table size 100 is not prime (Maglev needs a prime size): the nearest primes are 97 and 101`},
		"weight 0": {strings.Replace(goodMux, "weight: 3", "weight: 0", 1),
			`instance "web": server 1026: weight 0 must be in 1–1000000 (weight 0 is not a way to take a DIP out: drain or remove it, so its connections finish)`},
		"broadcast DIP": {strings.Replace(goodMux, "198.18.0.11", "255.255.255.255", 1),
			`instance "web": server 1026: DIP address 255.255.255.255 is the broadcast address: a server needs a unicast IPv4 or IPv6 address`},
		"multicast DIP": {strings.Replace(goodMux, "198.18.0.11", "239.0.0.1", 1),
			`instance "web": server 1026: DIP address 239.0.0.1 is a multicast address (224.0.0.0/4): a server needs a unicast IPv4 or IPv6 address`},
		"loopback DIP": {strings.Replace(goodMux, "198.18.0.11", "127.0.0.2", 1),
			`instance "web": server 1026: DIP address 127.0.0.2 is a loopback address (127.0.0.0/8): a server needs a unicast IPv4 or IPv6 address`},
		"unspecified DIP": {strings.Replace(goodMux, "198.18.0.11", "0.0.0.0", 1),
			`instance "web": server 1026: DIP address 0.0.0.0 is the unspecified address: a server needs a unicast IPv4 or IPv6 address`},
		"IPv6 DIP in an IPv4 instance": {strings.Replace(goodMux, "198.18.0.11", "2001:db8::11", 1),
			`instance "web": server 1026: DIP address 2001:db8::11 is IPv6 but instance "web" is IPv4: an instance's VIPs and servers share one family (direct server return answers from the VIP over the server's own routes)`},
		"mixed-family VIPs": {strings.Replace(goodMux, "[198.18.100.1]", "[198.18.100.1, 2001:db8:100::1]", 1),
			`invalid instance configuration "web": VIPs 198.18.100.1 and 2001:db8:100::1 are of different families: an instance is all IPv4 or all IPv6 (create one instance per family)`},
		"IPv6 mux address": {strings.Replace(goodMux, "address: 198.18.0.1", "address: 2001:db8::1", 1),
			`address 2001:db8::1: not a unicast IPv4 address (an IPv6 one goes in address6)`},
		"IPv4 mux address6": {strings.Replace(goodMux, "address: 198.18.0.1", "address: 198.18.0.1\naddress6: 198.18.0.2", 1),
			`address6 198.18.0.2: not an IPv6 address (an IPv4 one goes in address)`},
		"link-local mux address6": {strings.Replace(goodMux, "address: 198.18.0.1", "address: 198.18.0.1\naddress6: fe80::1", 1),
			`address6: DIP address fe80::1 is a link-local address (fe80::/10): a server needs a unicast IPv4 or IPv6 address`},
		"DIP is the mux": {strings.Replace(goodMux, "198.18.0.11", "198.18.0.1", 1),
			`instance "web": server 1026: address 198.18.0.1 is the mux's own address`},
		"DIP is its own VIP": {strings.Replace(goodMux, "198.18.0.11", "198.18.100.1", 1),
			`instance "web": server 1026: DIP address 198.18.100.1 is a VIP of instance "web"`},
		"DIP is a later instance's VIP": {strings.Replace(goodMux, "198.18.0.11", "198.18.100.2", 1) + second,
			`instance "web": server 1026: DIP address 198.18.100.2 is a VIP of instance "api"`},
		"VIP in two instances": {goodMux + strings.Replace(second, "198.18.100.2", "198.18.100.1", 1),
			`instance "api": VIP 198.18.100.1 is already a VIP of instance "web" (one instance per VIP: muxes find the instance by destination address)`},
		"VIP in two instances, other ports": {goodMux + strings.NewReplacer("198.18.100.2", "198.18.100.1", "port_low: 80\n    port_high: 80", "port_low: 1000\n    port_high: 1000").Replace(second),
			`instance "api": VIP 198.18.100.1 is already a VIP of instance "web" (one instance per VIP: muxes find the instance by destination address)`},
		"VIP is the mux": {strings.Replace(goodMux, "address: 198.18.0.1\n", "address: 198.18.100.1\n", 1),
			`instance "web": VIP 198.18.100.1 is the mux's own address`},
		"non-prime awfd": {strings.Replace(goodMux, "strategy: beamer", "strategy: awfd", 1),
			`invalid instance configuration "web": awfd table size 100 is not prime (awfd builds a Maglev table, which needs a prime size): the nearest primes are 97 and 101`},
		"VIP is a DIP of another instance": {goodMux + strings.Replace(second, "198.18.100.2", "198.18.0.11", 1),
			`instance "web": server 1026: DIP address 198.18.0.11 is a VIP of instance "api"`},
	}
	for name, c := range mux {
		p := write(t, c.text)
		_, err := LoadMux(p)
		if want := p + ": " + c.want; err == nil || err.Error() != want {
			t.Errorf("mux %s:\n got %v\nwant %s", name, err, want)
		}
	}
	agent := "interface: eth0\nserver_id: 1025\naddress: 198.18.0.10\ntrusted: [198.18.0.0/24]\nvips: [{vip: 198.18.100.1, buckets: 100}]\n"
	if _, err := LoadAgent(write(t, agent)); err != nil {
		t.Fatalf("good agent file: %v", err)
	}
	// A server of an IPv4 and an IPv6 instance: one address per family.
	dual := strings.NewReplacer("address: 198.18.0.10", "address: 198.18.0.10\naddress6: 2001:db8::10",
		"[198.18.0.0/24]", "[198.18.0.0/24, 2001:db8::/64]",
		"vips: [{vip: 198.18.100.1, buckets: 100}]", "vips: [{vip: 198.18.100.1, buckets: 100}, {vip: 2001:db8:100::1, buckets: 100}]").Replace(agent)
	if c, err := LoadAgent(write(t, dual)); err != nil || c.Address6 != netip.MustParseAddr("2001:db8::10") || len(c.VIPs) != 2 {
		t.Fatalf("dual-family agent file: %+v, %v", c, err)
	}
	agents := map[string]struct{ text, want string }{
		"empty file":        {"", "the file is empty: expected a YAML mapping (format: pkg/node/config)"},
		"broadcast VIP":     {strings.Replace(agent, "198.18.100.1", "255.255.255.255", 1), "VIP 255.255.255.255 is the broadcast address: a VIP must be a unicast IPv4 or IPv6 address"},
		"loopback VIP":      {strings.Replace(agent, "198.18.100.1", "127.0.0.1", 1), "VIP 127.0.0.1 is a loopback address (127.0.0.0/8): a VIP must be a unicast IPv4 or IPv6 address"},
		"one bucket":        {strings.Replace(agent, "buckets: 100", "buckets: 1", 1), "vip 198.18.100.1: buckets 1 must be in 2–16777216 (the instance's B)"},
		"huge buckets":      {strings.Replace(agent, "buckets: 100", "buckets: 4294967295", 1), "vip 198.18.100.1: buckets 4294967295 must be in 2–16777216 (the instance's B)"},
		"VIP is the server": {strings.Replace(agent, "198.18.100.1", "198.18.0.10", 1), "vip 198.18.0.10: is also the server's own address"},
		"IPv6 VIP, IPv4 trust only": {strings.Replace(agent, "198.18.100.1", "2001:db8:100::1", 1),
			"vip 2001:db8:100::1: IPv6, but no trusted prefix is IPv6 (GUE over IPv6 arrives from the muxes' IPv6 addresses)"},
		"IPv6 address": {strings.Replace(agent, "address: 198.18.0.10", "address: 2001:db8::10", 1),
			"address 2001:db8::10: not an IPv4 address (an IPv6 one goes in address6)"},
		"IPv4 address6": {strings.Replace(agent, "address: 198.18.0.10", "address6: 198.18.0.10", 1),
			"address6 198.18.0.10: not an IPv6 address (an IPv4 one goes in address)"},
		"VIP is the server's IPv6 address": {strings.NewReplacer("198.18.100.1", "2001:db8::10", "address: 198.18.0.10", "address6: 2001:db8::10", "[198.18.0.0/24]", "[2001:db8::/64]").Replace(agent),
			"vip 2001:db8::10: is also the server's own address"},
		"mapped trusted prefix": {strings.Replace(agent, "[198.18.0.0/24]", "[198.18.0.0/24, \"::ffff:198.18.0.0/120\"]", 1),
			"trusted prefix ::ffff:198.18.0.0/120: not an IPv4 or IPv6 prefix"},
		"window past the agents' bound": {strings.Replace(agent, "buckets: 100}", "buckets: 100, chain_window: 25h}", 1),
			"vip 198.18.100.1: chain window 25h0m0s must be within 0–24h0m0s (agents refuse a longer one)"},
		"trust everything": {strings.Replace(agent, "[198.18.0.0/24]", "[0.0.0.0/0]", 1),
			"trusted prefix 0.0.0.0/0: trusts every address: name the muxes' and servers' (or controllers') prefix"},
		"trusted host bits": {strings.Replace(agent, "[198.18.0.0/24]", "[198.18.0.10/24]", 1),
			"trusted prefix 198.18.0.10/24: has host bits set: write 198.18.0.0/24 (the network) or 198.18.0.10/32 (the one host)"},
		"controllers everything": {agent + "controllers: [\"::/0\"]\n",
			"controllers prefix ::/0: trusts every address: name the muxes' and servers' (or controllers') prefix"},
		"capacity NaN":      {agent + "capacity_bps: .nan\n", "capacity_bps NaN: must be a positive rate in bits/s (0 or unset: from the tbf/htb qdisc)"},
		"capacity negative": {agent + "capacity_bps: -1\n", "capacity_bps -1: must be a positive rate in bits/s (0 or unset: from the tbf/htb qdisc)"},
		"capacity infinite": {agent + "capacity_bps: .inf\n", "capacity_bps +Inf: must be a positive rate in bits/s (0 or unset: from the tbf/htb qdisc)"},
		"API on every address": {agent + "api: 0.0.0.0:9300\n",
			`api "0.0.0.0:9300": 0.0.0.0 listens on every address, the VIPs included, where clients could reach it: give the server's address (DIP:PORT), a loopback address, or leave api unset for DIP:9300`},
		"API on the VIP": {agent + "api: 198.18.100.1:9300\n",
			`api "198.18.100.1:9300": 198.18.100.1 is a VIP: clients could reach the API there: give the server's address (DIP:PORT), a loopback address, or leave api unset for DIP:9300`},
		"multicast address": {strings.Replace(agent, "198.18.0.10", "224.0.0.1", 1),
			"address: DIP address 224.0.0.1 is a multicast address (224.0.0.0/4): a server needs a unicast IPv4 or IPv6 address"},
	}
	for name, c := range agents {
		p := write(t, c.text)
		_, err := LoadAgent(p)
		if want := p + ": " + c.want; err == nil || err.Error() != want {
			t.Errorf("agent %s:\n got %v\nwant %s", name, err, want)
		}
	}
}
