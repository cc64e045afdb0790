package netlabtest

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab"
)

// DSRLayout is the load balancer's network on one fabric: a client whose
// route to the VIP points at the first mux, the muxes, and the servers,
// which answer the client directly (direct server return). Addresses come
// with their prefix length, all in one subnet.
type DSRLayout struct {
	VIP     netip.Addr
	Client  netip.Prefix
	Muxes   []netip.Prefix
	Servers []netip.Prefix
	// MTU is that of the muxes' and servers' links, which carry
	// encapsulated packets and need the room; the client's keeps the
	// default, so its packets fit once encapsulated. 0: the default.
	MTU int
	// MuxMTU, if set, is the muxes' links' MTU instead.
	MuxMTU int
}

// DSR is the network a DSRLayout built: namespaces client, mux0…, srv0…,
// each with eth0 on the fabric.
type DSR struct {
	Client  *netlab.Namespace
	Muxes   []*netlab.Namespace
	Servers []*netlab.Namespace
}

// DSR builds the layout on the rig's fabric. The client's transmit checksum
// offload is off: a segment an XDP program forwards would arrive with its
// checksum never filled in.
func (r *Rig) DSR(l DSRLayout) *DSR {
	r.t.Helper()
	d := &DSR{Client: r.Namespace("client")}
	r.Attach(d.Client, l.Client, 0)
	muxMTU := l.MTU
	if l.MuxMTU != 0 {
		muxMTU = l.MuxMTU
	}
	for i, addr := range l.Muxes {
		m := r.Namespace(fmt.Sprintf("mux%d", i))
		r.AttachMux(m, addr, muxMTU)
		d.Muxes = append(d.Muxes, m)
	}
	for i, addr := range l.Servers {
		s := r.Namespace(fmt.Sprintf("srv%d", i))
		r.Attach(s, addr, l.MTU)
		d.Servers = append(d.Servers, s)
	}
	Must(r.t, d.Client.DisableTxChecksum("eth0"))
	if len(l.Muxes) > 0 {
		_, err := d.Client.Run("ip", "route", "add", netip.PrefixFrom(l.VIP, l.VIP.BitLen()).String(), "via", l.Muxes[0].Addr().String())
		Must(r.t, err)
	}
	return d
}

// Sysctls sets "key=value" sysctls (dotted keys) in ns.
func Sysctls(t testing.TB, ns *netlab.Namespace, kvs ...string) {
	t.Helper()
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("sysctl %q: want key=value", kv)
		}
		Must(t, ns.Sysctl(k, v))
	}
}

// DSRServerSysctls make an IPv4 server answer for a VIP it holds on
// loopback without claiming it on the fabric (ARP), and accept packets the
// reverse path filter would find odd (a client's address arriving from a
// mux or a chaining server).
var DSRServerSysctls = []string{"net.ipv4.conf.all.arp_ignore=1", "net.ipv4.conf.all.arp_announce=2",
	"net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.eth0.rp_filter=0"}

// ServeVIP makes ns an IPv4 DSR server of vip: the VIP on loopback and
// DSRServerSysctls, plus any further "key=value" sysctls.
func ServeVIP(t testing.TB, ns *netlab.Namespace, vip netip.Addr, more ...string) {
	t.Helper()
	Must(t, ns.AddAddr("lo", netip.PrefixFrom(vip, vip.BitLen())))
	Sysctls(t, ns, append(append([]string(nil), more...), DSRServerSysctls...)...)
}
