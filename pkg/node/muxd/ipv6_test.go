package muxd

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
)

// TestStaticMuxIPv6: a mux with an IPv4 and an IPv6 instance takes its
// IPv6 address from the interface, turns IPv6 forwarding on for
// bpf_fib_lookup AF_INET6 when the IPv6 instance arrives (not before), gives the IPv6 servers on its link managed
// neighbour-discovery entries, reports an IPv6 server it has no route to
// as unreachable (the rest of the table still loads), and Close restores
// the sysctl.
func TestStaticMuxIPv6(t *testing.T) {
	ns, peer := netlabtest.NewRig(t, "muxd6").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.10/24"), 1600)
	if err := ns.AddAddr("eth0", netip.MustParsePrefix("2001:db8::1/64")); err != nil {
		t.Fatal(err)
	}
	if err := peer.AddAddr("eth0", netip.MustParsePrefix("2001:db8::10/64")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mux.yaml")
	os.WriteFile(path, []byte(`
interface: eth0
xdp_mode: generic
instances:
  - name: web
    vips: [198.18.100.1]
    port_low: 80
    port_high: 80
    buckets: 100
    servers:
      - {id: 1025, address: 198.18.0.10}
  - name: web6
    vips: [2001:db8:100::1]
    encap: gue
    port_low: 80
    port_high: 80
    buckets: 100
    servers:
      - {id: 1025, address: "2001:db8::10"}
      - {id: 1026, address: "2001:db8::11"}
      - {id: 1027, address: "2001:db8:ffff::12"}
`), 0o644)
	cfg, err := config.LoadMux(path)
	if err != nil {
		t.Fatal(err)
	}
	sysctl := func() string {
		out, err := ns.Run("sysctl", "-n", "net.ipv6.conf.eth0.forwarding")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	if err := ns.Sysctl("net.ipv6.conf.eth0.forwarding", "0"); err != nil {
		t.Fatal(err)
	}
	before := sysctl()
	var d *Daemon
	err = ns.Do(func() (err error) {
		d, err = Start(Options{Interface: cfg.Interface, XDPMode: dataplane.XDPGeneric, PinDir: "-", StateFile: filepath.Join(t.TempDir(), "state.json")})
		if err != nil {
			return err
		}
		for _, in := range cfg.Instances {
			if err := d.SetInstance(in.Instance, in.Table()); err != nil {
				return err
			}
			if in.Name == "web" && sysctl() != before {
				t.Error("IPv6 forwarding changed by an IPv4 instance")
			}
		}
		return d.Ready()
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			ns.Do(d.Close)
		}
	}()
	if d.Address6() != netip.MustParseAddr("2001:db8::1") {
		t.Errorf("address6 %v, want the interface's", d.Address6())
	}
	if st, err := d.Status(); err != nil || st.Address6 != "2001:db8::1" {
		t.Errorf("status: %+v, %v", st, err)
	}
	if sysctl() != "1" {
		t.Error("IPv6 forwarding off on eth0")
	}
	if out, _ := ns.Run("ip", "-6", "neigh", "show"); !strings.Contains(out, "2001:db8::10") || !strings.Contains(out, "managed") {
		t.Errorf("no managed IPv6 neighbour for the servers:\n%s", out)
	}
	// Both families' next hops published once resolved (the peer answers
	// ARP and neighbour solicitations); none for the server without route.
	peerEth0, err := peer.Netlink().LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	peerMAC := peerEth0.Attrs().HardwareAddr.String()
	for _, a := range []string{"198.18.0.10", "2001:db8::10"} {
		waitPublished(t, d.Mux(), netip.MustParseAddr(a), "server "+a, func(h dataplane.ResolvedNextHop, ok bool) bool {
			return ok && h.Dst.String() == peerMAC && h.MTU == 1600
		})
	}
	if h, ok := d.Mux().PublishedNextHop(netip.MustParseAddr("2001:db8:ffff::12")); ok {
		t.Errorf("a next hop published for a server without route: %v", h)
	}
	bad := d.Unreachable("web6")
	if _, ok := bad[netip.MustParseAddr("2001:db8:ffff::12")]; !ok || len(bad) != 1 {
		t.Errorf("unreachable IPv6 servers %v, want only 2001:db8:ffff::12 (no route)", bad)
	}
	if g, ok := d.Mux().Generation("web6"); !ok || g != 1 {
		t.Errorf("web6 generation %d, %v", g, ok)
	}
	if vips := d.VIPs(); len(vips) != 2 || vips[1] != netip.MustParseAddr("2001:db8:100::1") {
		t.Errorf("VIPs to announce %v", vips)
	}
	if err := ns.Do(d.Close); err != nil {
		t.Fatal(err)
	}
	closed = true
	if got := sysctl(); got != before {
		t.Errorf("IPv6 forwarding %s after Close, was %s", got, before)
	}
}

// TestIPv6OnlyMux: a mux whose interface has only an IPv6 address starts,
// forwards an IPv6 instance and refuses an IPv4 one (it has no address to
// encapsulate it from); an interface with no usable address is refused at
// start, saying so.
func TestIPv6OnlyMux(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "muxd6only").Pair("mux", netip.Prefix{}, "net", netip.MustParsePrefix("2001:db8::10/64"), 1700)
	opts := func() Options {
		return Options{Interface: "eth0", XDPMode: dataplane.XDPGeneric, PinDir: "-", StateFile: filepath.Join(t.TempDir(), "state.json")}
	}
	err := ns.Do(func() error {
		d, err := Start(opts())
		if err == nil {
			d.Close()
		}
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "nor a global IPv6 one") {
		t.Fatalf("a mux without addresses: %v", err)
	}
	if err := ns.AddAddr("eth0", netip.MustParsePrefix("2001:db8::1/64")); err != nil {
		t.Fatal(err)
	}
	mk := func(name, vip, dip string, encap forwarding.Encap) (forwarding.Instance, *forwarding.Table) {
		in := forwarding.Instance{Name: name, Strategy: forwarding.StrategyBeamer, Encap: encap, VIPs: []netip.Addr{netip.MustParseAddr(vip)},
			PortLow: 80, PortHigh: 80, Buckets: 10, ChainWindow: forwarding.DefaultChainWindow}
		tab := forwarding.NewTable(10)
		tab.Generation = 1
		tab.Servers[1025] = forwarding.Server{Addr: netip.MustParseAddr(dip), State: forwarding.Active}
		for i := range tab.Buckets {
			tab.Buckets[i].Current = 1025
		}
		return in, tab
	}
	var d *Daemon
	err = ns.Do(func() (err error) {
		if d, err = Start(opts()); err != nil {
			return err
		}
		if err := d.SetInstance(mk("web6", "2001:db8:100::1", "2001:db8::10", forwarding.EncapGUE)); err != nil {
			return err
		}
		if err := d.SetInstance(mk("web", "198.18.100.1", "198.18.0.10", "")); err == nil {
			t.Error("an IPv4 instance loaded on a mux without an IPv4 address")
		}
		return d.Ready()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Do(d.Close)
	if d.Address().IsValid() || d.Address6() != netip.MustParseAddr("2001:db8::1") {
		t.Errorf("addresses %v, %v", d.Address(), d.Address6())
	}
	if g, ok := d.Mux().Generation("web6"); !ok || g != 1 {
		t.Errorf("web6 generation %d, %v", g, ok)
	}
	if st, err := d.Status(); err != nil || st.Address != "" || st.Address6 != "2001:db8::1" {
		t.Errorf("status %+v, %v", st, err)
	}
}
