package beamercli

import (
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// run executes the beamer command line args in this process, with every
// flag back at its default first (cobra keeps flag values between runs).
func run(args ...string) error {
	var reset func(c *cobra.Command)
	reset = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if sv, ok := f.Value.(pflag.SliceValue); ok {
				sv.Replace(nil)
			} else {
				f.Value.Set(f.DefValue)
			}
			f.Changed = false
		})
		for _, sub := range c.Commands() {
			reset(sub)
		}
	}
	reset(rootCmd)
	rootCmd.SetArgs(args)
	return rootCmd.Execute()
}

// TestCtlRejections: bad ctl command lines are refused before anything is
// submitted, with exactly these messages.
func TestCtlRejections(t *testing.T) {
	const weight0 = "weight 0 must be in 1–1000000 (weight 0 is not a way to take a DIP out: drain or remove it, so its connections finish)"
	cases := []struct {
		args string
		want string
	}{
		{"ctl add-dip web -5 198.18.0.10", "-5 is not a valid value: server ids, weights and counts are positive numbers (a leading '-' makes it read as a flag)"},
		{"ctl set-weight web 1025 -1", "-1 is not a valid value: server ids, weights and counts are positive numbers (a leading '-' makes it read as a flag)"},
		{"ctl add-dip web 99 198.18.0.10", `server id "99" must be a number in 1025–65535`},
		{"ctl add-dip web 1030 255.255.255.255", "DIP address 255.255.255.255 is the broadcast address: a server needs a unicast IPv4 or IPv6 address"},
		{"ctl add-dip web 1030 224.0.0.1", "DIP address 224.0.0.1 is a multicast address (224.0.0.0/4): a server needs a unicast IPv4 or IPv6 address"},
		{"ctl add-dip web 1030 127.0.0.1", "DIP address 127.0.0.1 is a loopback address (127.0.0.0/8): a server needs a unicast IPv4 or IPv6 address"},
		{"ctl add-dip web 1030 0.0.0.0", "DIP address 0.0.0.0 is the unspecified address: a server needs a unicast IPv4 or IPv6 address"},
		{"ctl add-dip web 1030 ff02::1", "DIP address ff02::1 is a multicast address (ff00::/8): a server needs a unicast IPv4 or IPv6 address"},
		{"ctl add-dip web 1030 2001:db8::1::2", `DIP address "2001:db8::1::2" is not an IPv4 or IPv6 address`},
		{"ctl create web --vip 198.18.100.1 --vip 2001:db8:100::1 --ports 80 --buckets 100",
			`invalid instance configuration "web": VIPs 198.18.100.1 and 2001:db8:100::1 are of different families: an instance is all IPv4 or all IPv6 (create one instance per family)`},
		{"ctl create web --vip 2001:db8:100::1 --ports 80 --strategy maglev --buckets 101",
			`invalid instance configuration "web": strategy "maglev" does not forward IPv6: an IPv6 instance needs strategy beamer`},
		{"ctl create web --vip 2001:db8:100::1 --ports 80 --buckets 100",
			`invalid instance configuration "web": an IPv6 instance needs encap gue (IP-in-IP carries Beamer's fields in an IPv4 option)`},
		{"ctl create web --vip fe80::1 --ports 80 --buckets 100",
			`invalid instance configuration "web": VIP fe80::1 is a link-local address (fe80::/10): a VIP must be a unicast IPv4 or IPv6 address`},
		{"ctl add-dip web 1030 198.18.0.10 0", weight0},
		{"ctl set-weight web 1030 0", weight0},
		{"ctl create web --vip 198.18.100.1 --ports 80", errMissingBuckets.Error()},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --classes 3", "--classes, --poll and --hold are options of --strategy awfd"},
		{"ctl create web --vip 198.18.100.1 --ports 80 --strategy awfd --classes 0", "--classes 0: want 1–16"},
		{"ctl create web --vip 198.18.100.1 --ports 80 --strategy awfd --classes 17", `invalid instance configuration "web": awfd classes 17 must be in 1–16 (0 = default 4)`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --strategy awfd --poll 10ms", `invalid instance configuration "web": awfd poll 10ms must be in 50ms–10s`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --strategy awfd --buckets 1000", `invalid instance configuration "web": awfd table size 1000 is not prime (awfd builds a Maglev table, which needs a prime size): the nearest primes are 997 and 1009`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 1",
			`invalid instance configuration "web": bucket count 1 must be in 2–16777216 (B must exceed the number of DIPs; about 100 per DIP is a good size)`},
		{"ctl create web --vip 255.255.255.255 --ports 80 --buckets 100",
			`invalid instance configuration "web": VIP 255.255.255.255 is the broadcast address: a VIP must be a unicast IPv4 or IPv6 address`},
		{"ctl create web --vip 127.0.0.1 --ports 80 --buckets 100",
			`invalid instance configuration "web": VIP 127.0.0.1 is a loopback address (127.0.0.0/8): a VIP must be a unicast IPv4 or IPv6 address`},
		{"ctl create web --vip 224.1.1.1 --ports 80 --buckets 100",
			`invalid instance configuration "web": VIP 224.1.1.1 is a multicast address (224.0.0.0/4): a VIP must be a unicast IPv4 or IPv6 address`},
		{"ctl create web --vip 169.254.0.1 --ports 80 --buckets 100",
			`invalid instance configuration "web": VIP 169.254.0.1 is a link-local address (169.254.0.0/16): a VIP must be a unicast IPv4 or IPv6 address`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --strategy maglev --buckets 65536",
			`invalid instance configuration "web": maglev table size 65536 is not prime (Maglev needs a prime size): the nearest primes are 65521 and 65537`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --mct-entries 5",
			"--mct-entries is a prism option; this instance is beamer"},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy prism --mct-entries 99999999",
			`invalid instance configuration "web": prism mct_entries 99999999 must be in 1–4194304`},
		{"ctl create web --vip 198.18.100.1 --ports 80 --buckets 100 --strategy round-robin",
			`invalid instance configuration "web": strategy "round-robin" is unknown; want ` + forwarding.StrategyNames()},
	}
	for _, c := range cases {
		err := run(strings.Fields(c.args)...)
		if err == nil || err.Error() != c.want {
			t.Errorf("beamer %s:\n got %v\nwant %s", c.args, err, c.want)
		}
	}
}

// TestCtlCreateBucketsDefault: --buckets claims a default only for maglev,
// and that default is applied: a maglev create without it passes every
// check and reaches the store through the API (where no controller answers).
func TestCtlCreateBucketsDefault(t *testing.T) {
	usage := ctlSub(t, "create").Flags().Lookup("buckets").Usage
	if !strings.Contains(usage, "beamer (required)") || !strings.Contains(usage, "65537 when not given") {
		t.Fatalf("--buckets help: %q", usage)
	}
	api := emptyAPI(t)
	err := run("ctl", "create", "web", "--vip", "198.18.100.1", "--ports", "80", "--strategy", "maglev", "--api", api, "--timeout", "300ms")
	if err == nil || !strings.Contains(err.Error(), "no controller is elected on this store") {
		t.Fatalf("maglev create without --buckets: %v", err)
	}
}

func ctlSub(t *testing.T, name string) *cobra.Command {
	for _, c := range findCmd(t, "ctl").Commands() {
		if c.Name() == name {
			return c
		}
	}
	t.Fatalf("no ctl %s", name)
	return nil
}
