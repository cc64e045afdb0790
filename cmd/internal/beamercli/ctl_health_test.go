package beamercli

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseAddDIPs(t *testing.T) {
	for _, c := range []struct {
		args   []string
		weight string
		flag   bool
		want   string // fmt of the DIPs, or an error fragment
	}{
		{[]string{"1025", "198.18.0.10"}, "1", false, "[{1025 198.18.0.10 1}]"},
		{[]string{"1025", "198.18.0.10", "3"}, "1", false, "[{1025 198.18.0.10 3}]"},
		{[]string{"1025", "198.18.0.10", "1026", "198.18.0.11"}, "2", true, "[{1025 198.18.0.10 2} {1026 198.18.0.11 2}]"},
		{[]string{"1025", "198.18.0.10", "3"}, "2", true, "not both"},
		{[]string{"1025", "198.18.0.10", "1026", "198.18.0.11", "1027"}, "1", false, "pairs"},
		{[]string{"1025", "2001:db8::1"}, "1", false, "[{1025 2001:db8::1 1}]"},
		{[]string{"1025", "2001:db8::1", "1026", "2001:db8::2"}, "1", false, "[{1025 2001:db8::1 1} {1026 2001:db8::2 1}]"},
		{[]string{"1025", "fe80::1"}, "1", false, "link-local address (fe80::/10)"},
		{[]string{"1025", "::ffff:198.18.0.10"}, "1", false, "IPv4-mapped"},
		{[]string{"1025", "198.18.0"}, "1", false, `DIP address "198.18.0" is not an IPv4 or IPv6 address`},
		{[]string{"80", "198.18.0.10"}, "1", false, "1025–65535"},
		{[]string{"1025", "198.18.0.10"}, "0", true, "weight"},
	} {
		got, err := parseAddDIPs(c.args, c.weight, c.flag)
		s := fmt.Sprint(got)
		if err != nil {
			s = err.Error()
		}
		if !strings.Contains(s, c.want) {
			t.Errorf("%v --weight %s: %s, want %s", c.args, c.weight, s, c.want)
		}
	}
}
