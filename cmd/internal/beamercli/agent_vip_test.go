package beamercli

import (
	"fmt"
	"strings"
	"testing"
)

// TestParseAgentVIP: --vip takes an IPv4 VIP as is and an IPv6 VIP in
// brackets (its colons would otherwise be read as separators).
func TestParseAgentVIP(t *testing.T) {
	for in, want := range map[string]string{
		"198.18.100.1:6400":             "198.18.100.1 6400 <nil>",
		"198.18.100.1:6400:4m":          "198.18.100.1 6400 4m0s",
		"[2001:db8:100::1]:6400":        "2001:db8:100::1 6400 <nil>",
		"[2001:db8:100::1]:6400:30s":    "2001:db8:100::1 6400 30s",
		"2001:db8:100::1:6400":          "an IPv6 VIP in brackets: [2001:db8:100::1]:6400",
		"[2001:db8:100::1]6400":         "want [IPv6]:BUCKETS[:WINDOW]",
		"[2001:db8:100::1]:":            "want VIP:BUCKETS[:WINDOW]",
		"198.18.100.1":                  "want VIP:BUCKETS[:WINDOW]",
		"198.18.100.1:6400:4m:9":        "want VIP:BUCKETS[:WINDOW]",
		"[198.18.100.1]:x":              "bucket count",
		"[2001:db8:100::1]:6400:soon":   "window",
		"[2001:db8:100::1%eth0]:6400":   "2001:db8:100::1%eth0 6400 <nil>", // parsed; config.Validate refuses the zone
		"[2001:db8:100:::1]:6400":       "ParseAddr",
		"2001:db8:6400":                 "ParseAddr",
		"[fe80::1]:6400:4m":             "fe80::1 6400 4m0s",
		"[::ffff:198.18.100.1]:6400:4m": "::ffff:198.18.100.1 6400 4m0s",
	} {
		v, err := parseAgentVIP(in)
		got := fmt.Sprint(v.VIP, " ", v.Buckets, " ", v.ChainWindow)
		if v.ChainWindow != nil {
			got = fmt.Sprint(v.VIP, " ", v.Buckets, " ", *v.ChainWindow)
		}
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, want) {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
