package agentd

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestAgentXDPModes: by default the agent puts its XDP fast path in front
// of the tc program where the interface runs native XDP (veth does) and
// removes it on Close; "off" leaves tc alone; "native" on an interface
// without native XDP (a VXLAN device) refuses to start, while "auto" there
// starts with tc alone; an unknown mode is an error.
func TestAgentXDPModes(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "agxdp").Pair("srv", netip.MustParsePrefix("198.18.0.10/24"), "net", netip.MustParsePrefix("198.18.0.1/24"), 0)
	// A VXLAN device: its driver has no native XDP.
	if _, err := ns.Run("ip", "link", "add", "d0", "type", "vxlan", "id", "42", "dstport", "4789", "dev", "eth0"); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Run("ip", "addr", "add", "198.18.1.10/24", "dev", "d0"); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.Run("ip", "link", "set", "d0", "up"); err != nil {
		t.Fatal(err)
	}
	xdpOn := func(dev string) bool {
		out, err := ns.Run("ip", "link", "show", dev)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(out, "prog/xdp")
	}
	start := func(dev, mode string) (*Daemon, error) {
		cfg := config.Agent{Interface: dev, ServerID: 1030, Trusted: []netip.Prefix{netip.MustParsePrefix("198.18.0.0/24")},
			VIPs: []config.AgentVIP{{VIP: netip.MustParseAddr("198.18.100.1"), Buckets: 100}}}
		o := testOptions(t)
		o.XDP = mode
		var d *Daemon
		err := ns.Do(func() (err error) { d, err = Start(cfg, o); return err })
		return d, err
	}
	for _, c := range []struct {
		dev, mode string
		fails     bool
		xdp       bool
	}{
		{"eth0", "", false, true},
		{"eth0", XDPOff, false, false},
		{"eth0", XDPNative, false, true},
		{"d0", XDPAuto, false, false},
		{"d0", XDPNative, true, false},
		{"eth0", "fast", true, false},
	} {
		d, err := start(c.dev, c.mode)
		if (err != nil) != c.fails {
			t.Errorf("%s, xdp %q: start error %v, want failure %v", c.dev, c.mode, err, c.fails)
		}
		if err != nil {
			if xdpOn(c.dev) {
				t.Errorf("%s, xdp %q: a failed start left an XDP program", c.dev, c.mode)
			}
			continue
		}
		if d.XDPAttached() != c.xdp || xdpOn(c.dev) != c.xdp {
			t.Errorf("%s, xdp %q: attached %v (ip link: %v), want %v", c.dev, c.mode, d.XDPAttached(), xdpOn(c.dev), c.xdp)
		}
		if err := ns.Do(d.Close); err != nil {
			t.Fatal(err)
		}
		if xdpOn(c.dev) {
			t.Errorf("%s, xdp %q: XDP program left after Close", c.dev, c.mode)
		}
	}
}
