package dataplane

import (
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// TestTooBigGUE: with the instance switched to GUE the mux counts GUE's
// outer headers in its too-big check: 48 bytes for a bucket that never
// moved (the client is told 1452 on a 1500 MTU), 32 for a subflow by server
// id (1468), 12 more than IP-in-IP each; what fits leaves in GUE.
func TestTooBigGUE(t *testing.T) {
	ns, ifindex, m := tooBigNet(t)
	setWeb(t, m, 2, forwarding.EncapGUE, netip.MustParseAddr("198.18.0.10"), netip.MustParseAddr("198.18.0.11"))
	step := func(name string, frame []byte, wantCounter string, gue bool) []byte {
		t.Helper()
		before, err := m.Counters()
		must(t, err)
		action, out := runXDP(t, ns, ifindex, m.Program(), frame)
		after, err := m.Counters()
		must(t, err)
		if action != "tx" || after[wantCounter]-before[wantCounter] != 1 {
			t.Errorf("%s: %s, %s moved by %d", name, action, wantCounter, after[wantCounter]-before[wantCounter])
		}
		if g := after["fwd_gue"] - before["fwd_gue"]; (g == 1) != gue {
			t.Errorf("%s: fwd_gue moved by %d", name, g)
		}
		return out
	}
	m.FlushNextHops()
	if out := step("fits", tooBigFrame(1452, 80, true), "fwd_bucket", true); len(out) != 14+1500 || out[14+9] != 17 {
		t.Errorf("fits: a %d-byte frame, protocol %d", len(out), out[14+9])
	}
	big := tooBigFrame(1453, 80, true)
	checkFragNeeded(t, big, step("one byte over", big, "icmp_too_big", false), 1452)
	step("server id fits", tooBigFrame(1468, 1026, true), "fwd_server_id", true)
	sub := tooBigFrame(1469, 1026, true)
	checkFragNeeded(t, sub, step("server id too big", sub, "icmp_too_big", false), 1468)
}
