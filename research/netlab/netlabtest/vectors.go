package netlabtest

import (
	"net"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/pkg/wire/wiretest"
	"github.com/beamer-lb/beamer/research/netlab"
	"github.com/vishvananda/netlink"
)

// VectorNet is the network the golden vectors' mux scenarios
// (testdata/vectors.json) assume: a namespace whose route lookups give the
// scenario's next hops — eth0 (02:be:a0:00:00:02, 198.18.0.1/24) toward the
// gateway 198.18.0.2 that reaches 198.18.2.0/24, eth1 (02:be:a0:00:00:04)
// for redirects, each next hop a permanent neighbour with the scenario's
// MAC. A program run there with BPF_PROG_TEST_RUN forwards as the vectors
// say. Used by the data-plane tests and the benchmarks' own tests.
type VectorNet struct {
	NS      *netlab.Namespace
	Ifindex int // eth0's: the ingress interface of the vectors' packets
}

// NewVectorNet builds the vectors' network for s, removed when t ends.
func NewVectorNet(t testing.TB, s *wiretest.MuxScenario) *VectorNet {
	t.Helper()
	rig := NewRig(t, "mux")
	ns, peer := rig.Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.2/24"), 0)
	rig.Link(ns, "eth1", netip.MustParsePrefix("198.18.3.1/24"), peer, "eth1", netip.MustParsePrefix("198.18.3.2/24"), 0)
	nl := ns.Netlink()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	link := func(dev string) netlink.Link {
		t.Helper()
		l, err := nl.LinkByName(dev)
		must(err)
		return l
	}
	for dev, mac := range map[string]string{"eth0": "02:be:a0:00:00:02", "eth1": "02:be:a0:00:00:04"} {
		hw, _ := net.ParseMAC(mac)
		must(nl.LinkSetHardwareAddr(link(dev), hw))
	}
	must(ns.Sysctl("net.ipv4.ip_forward", "1"))
	eth0 := link("eth0")
	gw := netip.MustParseAddr("198.18.0.2")
	_, dst, _ := net.ParseCIDR("198.18.2.0/24")
	must(nl.RouteAdd(&netlink.Route{LinkIndex: eth0.Attrs().Index, Dst: dst, Gw: net.IP(gw.AsSlice())}))
	for _, h := range s.NextHops {
		if h.Result != "tx" && h.Result != "redirect" {
			continue
		}
		neigh := h.Addr
		if netip.MustParsePrefix("198.18.2.0/24").Contains(neigh) {
			neigh = gw
		}
		dev := "eth0"
		if h.Result == "redirect" {
			dev = "eth1"
		}
		hw, _ := net.ParseMAC(h.DstMAC)
		must(nl.NeighSet(&netlink.Neigh{LinkIndex: link(dev).Attrs().Index, IP: net.IP(neigh.AsSlice()), HardwareAddr: hw,
			State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V4}))
	}
	return &VectorNet{NS: ns, Ifindex: eth0.Attrs().Index}
}
