package forwarding

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// TestCheckServer: one method says whether a server can be an instance's,
// with the reason — id range, the instance's server-id range, the
// strategy's own rule on ids (Cheetah's 15-bit cookie), address kind and
// family, weight.
func TestCheckServer(t *testing.T) {
	beamer := &Instance{Name: "web", Strategy: StrategyBeamer, VIPs: []netip.Addr{netip.MustParseAddr("198.18.100.1")}}
	ranged := *beamer
	ranged.ServerIDRange = &ServerIDRange{PortRange: PortRange{Low: 20000, High: 29999}}
	ch := *beamer
	ch.Strategy = StrategyCheetah
	ch.Cheetah = &CheetahOptions{Policy: CheetahRR, Keys: cookie.Keys{Keys: [2]cookie.Key{{1, 2, 3, 4}}}}
	a := netip.MustParseAddr("198.18.0.10")
	for _, c := range []struct {
		in     *Instance
		id     ServerID
		addr   netip.Addr
		weight uint32
		want   string // "" = accepted
	}{
		{beamer, 1025, a, 1, ""},
		{beamer, 1024, a, 1, "server id 1024 is outside 1025–65535"},
		{&ranged, 1025, a, 1, "outside instance web's server-id range"},
		{&ranged, 20001, a, 1, ""},
		{&ch, 40000, a, 1, "does not fit a Cheetah cookie"},
		{&ch, 32767, a, 1, ""},
		{beamer, 40000, a, 1, ""},
		{beamer, 1025, netip.MustParseAddr("255.255.255.255"), 1, "the broadcast address"},
		{beamer, 1025, netip.Addr{}, 1, "DIP address missing"},
		{beamer, 1025, netip.MustParseAddr("2001:db8::10"), 1, "is IPv6 but instance \"web\" is IPv4"},
		{beamer, 1025, a, 0, "weight 0 must be in 1–"},
		{beamer, 1025, a, MaxWeight + 1, "must be in 1–"},
	} {
		err := c.in.CheckServer(c.id, c.addr, c.weight)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s server %d %v weight %d: refused: %v", c.in.Strategy, c.id, c.addr, c.weight, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s server %d %v weight %d: %v, want %q", c.in.Strategy, c.id, c.addr, c.weight, err, c.want)
		}
	}
}
