package beamercli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOptionRejections: options every component would refuse later (an
// agent a window, a server its VIP, the controller a mux address) are
// refused where they enter, by the command line, with the reason — before
// anything is attached, started or submitted.
//
// Should a check go missing, nothing may start on this host: the agents and
// muxes name an interface that does not exist, touch neither lo nor bpffs
// and keep their state file in the test's directory, and every store URL
// has a scheme no store has.
func TestOptionRejections(t *testing.T) {
	safe := "--iface beamer-nosuch0 --no-manage-vips --pin-dir - --state-file " + filepath.Join(t.TempDir(), "state.json")
	agent := "agent " + safe + " --id 1025 --trusted 198.18.0.0/24 --vip 198.18.100.1:6400"
	const apiWant = ": give the server's address (DIP:PORT), a loopback address, or leave api unset for DIP:9300"
	cases := []struct {
		args string
		want string
	}{
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --chain-window 100000h --api 127.0.0.1:1",
			`invalid instance configuration "web": chain window 100000h0m0s must be within 0–24h0m0s (agents refuse a longer one)`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy cheetah --chain-window 25h --api 127.0.0.1:1",
			`invalid instance configuration "web": chain window 25h0m0s must be within 0–24h0m0s (agents refuse a longer one)`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --strategy awfd --buckets 6400 --api 127.0.0.1:1",
			`invalid instance configuration "web": awfd table size 6400 is not prime (awfd builds a Maglev table, which needs a prime size): the nearest primes are 6397 and 6421`},
		{agent + " --capacity-bps NaN", "capacity_bps NaN: must be a positive rate in bits/s (0 or unset: from the tbf/htb qdisc)"},
		{agent + " --capacity-bps -1", "capacity_bps -1: must be a positive rate in bits/s (0 or unset: from the tbf/htb qdisc)"},
		{agent + " --capacity-bps +Inf", "capacity_bps +Inf: must be a positive rate in bits/s (0 or unset: from the tbf/htb qdisc)"},
		{agent + " --api 0.0.0.0:9300", `api "0.0.0.0:9300": 0.0.0.0 listens on every address, the VIPs included, where clients could reach it` + apiWant},
		{agent + " --api [::]:9300", `api "[::]:9300": :: listens on every address, the VIPs included, where clients could reach it` + apiWant},
		{agent + " --api :9300", `api ":9300": listens on every address, the VIPs included, where clients could reach it` + apiWant},
		{agent + " --api 198.18.100.1:9300", `api "198.18.100.1:9300": 198.18.100.1 is a VIP: clients could reach the API there` + apiWant},
		{"agent " + safe + " --id 1025 --trusted 0.0.0.0/0 --vip 198.18.100.1:6400",
			"trusted prefix 0.0.0.0/0: trusts every address: name the muxes' and servers' (or controllers') prefix"},
		{"agent " + safe + " --id 1025 --trusted 198.18.0.10/24 --vip 198.18.100.1:6400",
			"trusted prefix 198.18.0.10/24: has host bits set: write 198.18.0.0/24 (the network) or 198.18.0.10/32 (the one host)"},
		{agent + " --controllers 198.18.0.250/24",
			"controllers prefix 198.18.0.250/24: has host bits set: write 198.18.0.0/24 (the network) or 198.18.0.250/32 (the one host)"},
		{"agent " + safe + " --id 1025 --trusted 198.18.0.0/24 --vip 198.18.100.1:6400:100000h",
			"vip 198.18.100.1: chain window 100000h0m0s must be within 0–24h0m0s (agents refuse a longer one)"},
		{"agent " + safe + " --id 1025 --trusted 198.18.0.0/24 --addr 198.18.0.10 --vip 198.18.0.10:6400",
			"vip 198.18.0.10: is also the server's own address"},
		{"mux --iface beamer-nosuch0 --pin-dir - --instance web,web --api 127.0.0.1:1",
			`--instance "web": named twice (follow each instance once)`},
		{"mux --iface beamer-nosuch0 --pin-dir - --instance web --instance Web --api 127.0.0.1:1",
			`--instance "Web": name must be 1–63 characters of a-z, 0-9 and '-', starting with a letter or digit`},
		{"controller --prism-muxes nonsense,:::: --api 127.0.0.1:1",
			`prism mux "nonsense": want host:port (a mux's --metrics address)`},
		{"controller --prism-muxes 198.18.0.1:9100,:::: --api 127.0.0.1:1",
			`prism mux "::::": want host:port (a mux's --metrics address)`},
		{"controller --prism-muxes :9100 --api 127.0.0.1:1",
			`prism mux ":9100": no host: want host:port (a mux's --metrics address)`},
	}
	for _, c := range cases {
		err := run(strings.Fields(c.args)...)
		if err == nil || err.Error() != c.want {
			t.Errorf("beamer %s:\n got %v\nwant %s", c.args, err, c.want)
		}
	}
}
