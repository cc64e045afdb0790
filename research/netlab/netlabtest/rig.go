package netlabtest

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/beamer-lb/beamer/research/netlab"
)

// Rig is one test's network: a lab whose namespaces (named uniquely per
// process and test, see netlab.New) are removed when the test ends, pass
// or fail, and an optional layer-2 fabric — a namespace holding the bridge
// br0 — that hosts join with Attach. Every step fails the test on error,
// so a test reads as the network it builds.
type Rig struct {
	t   testing.TB
	Lab *netlab.Lab
	// NoDAD turns duplicate address detection off (all, default) in every
	// namespace made after it is set: an IPv6 network whose link-local
	// addresses must be usable at once.
	NoDAD  bool
	fabric *netlab.Namespace
	ports  int
}

// NewRig skips (or in CI fails, see RequireRoot) a test without root and
// starts its rig.
func NewRig(t testing.TB, tag string) *Rig {
	t.Helper()
	return &Rig{t: t, Lab: New(t, tag)}
}

// Must fails the test on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Namespace makes a namespace with loopback up.
func (r *Rig) Namespace(name string) *netlab.Namespace {
	r.t.Helper()
	ns, err := r.Lab.Namespace(name)
	Must(r.t, err)
	if r.NoDAD {
		for _, k := range []string{"all", "default"} {
			Must(r.t, ns.Sysctl("net.ipv6.conf."+k+".accept_dad", "0"))
		}
	}
	return ns
}

// Link joins a and b with a veth pair: device aDev with address aAddr in a,
// bDev with bAddr in b (an invalid prefix: no address), both up. mtu 0
// keeps the default.
func (r *Rig) Link(a *netlab.Namespace, aDev string, aAddr netip.Prefix, b *netlab.Namespace, bDev string, bAddr netip.Prefix, mtu int) {
	r.t.Helper()
	Must(r.t, r.Lab.Veth(a, aDev, aAddr, b, bDev, bAddr, mtu))
}

// Pair is two namespaces joined by their eth0s: the smallest network, a
// daemon's namespace and the net beside it.
func (r *Rig) Pair(aName string, aAddr netip.Prefix, bName string, bAddr netip.Prefix, mtu int) (a, b *netlab.Namespace) {
	r.t.Helper()
	a, b = r.Namespace(aName), r.Namespace(bName)
	r.Link(a, "eth0", aAddr, b, "eth0", bAddr, mtu)
	return a, b
}

// Fabric is the namespace of the bridge br0, made at the first call.
func (r *Rig) Fabric() *netlab.Namespace {
	r.t.Helper()
	if r.fabric == nil {
		r.fabric = r.Namespace("fabric")
		Must(r.t, r.fabric.Bridge("br0"))
	}
	return r.fabric
}

// Attach joins ns to the fabric: its eth0, with addr, is a veth whose other
// end is a port of br0. mtu 0 keeps the default. It returns the port's
// name in the fabric.
func (r *Rig) Attach(ns *netlab.Namespace, addr netip.Prefix, mtu int) string {
	r.t.Helper()
	port := fmt.Sprintf("p%d", r.ports)
	r.ports++
	r.AttachPort(ns, port, addr, mtu)
	return port
}

// AttachPort is Attach with the port named by the caller (a test that looks
// at the port afterwards).
func (r *Rig) AttachPort(ns *netlab.Namespace, port string, addr netip.Prefix, mtu int) {
	r.t.Helper()
	fabric := r.Fabric()
	r.Link(ns, "eth0", addr, fabric, port, netip.Prefix{}, mtu)
	nl := fabric.Netlink()
	br, err := nl.LinkByName("br0")
	Must(r.t, err)
	l, err := nl.LinkByName(port)
	Must(r.t, err)
	Must(r.t, nl.LinkSetMaster(l, br))
}

// AttachMux is Attach for a namespace whose eth0 runs an XDP mux: its
// fabric port gets an XDP program that passes everything (detached when the
// test ends), without which a veth drops the frames the mux sends back
// with XDP_TX.
func (r *Rig) AttachMux(ns *netlab.Namespace, addr netip.Prefix, mtu int) {
	r.t.Helper()
	port := r.Attach(ns, addr, mtu)
	pass, err := r.fabric.AttachXDPPass(port)
	Must(r.t, err)
	r.t.Cleanup(func() { pass.Close() })
}
