package config

import (
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
		"empty file":     {"", "the file is empty: expected a YAML mapping (format: pkg/config)"},
		"only a comment": {"# nothing\n", "the file is empty: expected a YAML mapping (format: pkg/config)"},
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
	agents := map[string]struct{ text, want string }{
		"empty file":        {"", "the file is empty: expected a YAML mapping (format: pkg/config)"},
		"broadcast VIP":     {strings.Replace(agent, "198.18.100.1", "255.255.255.255", 1), "VIP 255.255.255.255 is the broadcast address: a VIP must be a unicast IPv4 or IPv6 address"},
		"loopback VIP":      {strings.Replace(agent, "198.18.100.1", "127.0.0.1", 1), "VIP 127.0.0.1 is a loopback address (127.0.0.0/8): a VIP must be a unicast IPv4 or IPv6 address"},
		"one bucket":        {strings.Replace(agent, "buckets: 100", "buckets: 1", 1), "vip 198.18.100.1: buckets 1 must be in 2–16777216 (the instance's B)"},
		"huge buckets":      {strings.Replace(agent, "buckets: 100", "buckets: 4294967295", 1), "vip 198.18.100.1: buckets 4294967295 must be in 2–16777216 (the instance's B)"},
		"VIP is the server": {strings.Replace(agent, "198.18.100.1", "198.18.0.10", 1), "vip 198.18.0.10: is also the server's own address"},
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
