package dataplane

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/research/netlab/netlabtest"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
)

// TestPredecessorNextHops: a mux that dies without withdrawing (SIGKILL:
// here its descriptors closed, nothing else) leaves its pinned program
// forwarding by a next hop it published, which no one follows any more.
// The next mux, from its load until it swaps its own program in, leaves
// that program to the FIB: the published entry withdrawn, the cached FIB
// answers' epoch ticked.
func TestPredecessorNextHops(t *testing.T) {
	ns, _ := netlabtest.NewRig(t, "nhpred").Pair("mux", netip.MustParsePrefix("198.18.0.1/24"), "net", netip.MustParsePrefix("198.18.0.2/24"), 1500)
	must(t, ns.Sysctl("net.ipv4.ip_forward", "1"))
	nl := ns.Netlink()
	eth0, err := nl.LinkByName("eth0")
	must(t, err)
	ifindex := eth0.Attrs().Index
	server := netip.MustParseAddr("198.18.0.10")
	kernelMAC := net.HardwareAddr{2, 0xbe, 0xa0, 0, 1, 0}
	must(t, nl.NeighSet(&netlink.Neigh{LinkIndex: ifindex, IP: net.IP(server.AsSlice()), Family: netlink.FAMILY_V4,
		HardwareAddr: kernelMAC, State: netlink.NUD_PERMANENT}))
	opts := MuxOptions{Addr: netip.MustParseAddr("198.18.0.1"), PinDir: netlabtest.PinDir(t, "nhpred")}

	first, err := LoadMux(opts)
	must(t, err)
	setWeb(t, first, 1, forwarding.EncapIPIP, server)
	var l link.Link
	must(t, ns.Do(func() (err error) { l, err = first.Attach("eth0", XDPGeneric); return err }))
	h, _, err := lookupIn(ns, first).Resolve(server)
	must(t, err)
	published := net.HardwareAddr{2, 0x99, 0, 0, 0, 1}
	h.Dst = published
	must(t, first.PublishNextHop(server, h))
	info, err := first.objs.BeamerMux.Info()
	must(t, err)
	id, _ := info.ID()
	// The mux dies: its descriptors close, its pins stay, nothing withdrawn.
	l.Close()
	must(t, first.Close())

	dead, err := ebpf.NewProgramFromID(id)
	must(t, err)
	defer dead.Close()
	frame := tooBigFrame(100, 80, true)
	sends := func(name string, want net.HardwareAddr) {
		t.Helper()
		action, out := runXDP(t, ns, ifindex, dead, frame)
		if action != "tx" || !bytes.Equal(out[0:6], want) {
			t.Fatalf("%s: the dead mux's program: %s to %v, want tx to %v", name, action, net.HardwareAddr(out[0:6]), want)
		}
	}
	sends("after the unclean stop", published)
	if in, err := InspectMux(opts.PinDir); err != nil || len(in.PublishedNextHops) != 1 {
		t.Fatalf("the dead mux's published next hops: %v (%v), want its one", in, err)
	}

	second, err := LoadMux(opts)
	must(t, err)
	defer second.Close()
	in, err := InspectMux(opts.PinDir)
	must(t, err)
	if in.Program.ID != uint32(id) {
		t.Fatalf("pinned program %d, want the dead mux's %d until the next one attaches", in.Program.ID, id)
	}
	if len(in.PublishedNextHops) != 0 {
		t.Errorf("the dead mux's published next hops after the next mux loaded: %v, want none", in.PublishedNextHops)
	}
	sends("the next mux loaded", kernelMAC) // asked of the FIB, cached
	second.FlushNextHops()
	if in, err = InspectMux(opts.PinDir); err != nil {
		t.Fatal(err)
	}
	for _, c := range in.NextHops {
		if c.Addr == server && c.Current {
			t.Errorf("the dead mux's cached FIB answer %v still current after the next mux flushed: its epoch does not move", c)
		}
	}
	// The next mux takes over: it ticks the dead one's epoch no more.
	var l2 link.Link
	must(t, ns.Do(func() (err error) { l2, err = second.Attach("eth0", XDPGeneric); return err }))
	defer l2.Close()
	if second.predecessor != nil {
		t.Error("the predecessor's epoch still held after the swap")
	}
}

// TestPinnedMuxKeepsIPv6Path: the program of a mux that stopped without
// detaching still reaches its IPv6 path (the tail call the kernel would
// empty once the process let go of its program array): an IPv6 VIP's
// packet is forwarded, not passed to the kernel.
func TestPinnedMuxKeepsIPv6Path(t *testing.T) {
	netlabtest.RequireRoot(t)
	_, b := newMux6Bench(t, mux6AddrV4, mux6Addr) // its rig; its own mux, unpinned, stays unattached
	pinned, err := LoadMux(MuxOptions{Addr: mux6AddrV4, Addr6: mux6Addr, PinDir: netlabtest.PinDir(t, "mux6pin")})
	must(t, err)
	in := mux6Instance()
	must(t, pinned.SetInstance(in, mux6Table()))
	var l link.Link
	must(t, b.ns.Do(func() (err error) { l, err = pinned.Attach("eth0", XDPGeneric); return err }))
	info, err := pinned.objs.BeamerMux.Info()
	must(t, err)
	id, _ := info.ID()
	l.Close()
	must(t, pinned.Close())
	dead, err := ebpf.NewProgramFromID(id)
	must(t, err)
	defer dead.Close()

	f0 := flow6To(6, 80, 0) // bucket 0: server 1025
	frame := pkt6{src: f0.Src, dst: f0.Dst, proto: 6, sport: f0.SrcPort, dport: f0.DstPort, flags: 0x10}.frame()
	// The kernel empties an array nothing holds in deferred work: give it
	// time to, were the array not pinned.
	time.Sleep(300 * time.Millisecond)
	if action, out := runXDP(t, b.ns, b.ifindex, dead, frame); action != "tx" || net.HardwareAddr(out[0:6]).String() != mux6MAC[1025] {
		t.Errorf("IPv6 packet through the stopped mux's pinned program: %s to %v, want tx to %s", action, net.HardwareAddr(out[0:6]), mux6MAC[1025])
	}

	// A successor pins its own array before it swaps its program in, and
	// the predecessor's array stays held until the swap: pinning over it
	// then would have emptied it while its program still ran.
	next, err := LoadMux(MuxOptions{Addr: mux6AddrV4, Addr6: mux6Addr, PinDir: pinned.pinDir})
	must(t, err)
	defer next.Close()
	must(t, next.SetInstance(in, mux6Table()))
	must(t, next.pinTailCalls())
	time.Sleep(300 * time.Millisecond)
	if action, _ := runXDP(t, b.ns, b.ifindex, dead, frame); action != "tx" {
		t.Errorf("IPv6 packet through the predecessor's program while its successor loads: %s, want tx", action)
	}
	var l2 link.Link
	must(t, b.ns.Do(func() (err error) { l2, err = next.Attach("eth0", XDPGeneric); return err }))
	defer l2.Close()
	if _, err := os.Stat(filepath.Join(pinned.pinDir, tailCallsPinNext)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left after the swap: %v", tailCallsPinNext, err)
	}
	arr, err := ebpf.LoadPinnedMap(filepath.Join(pinned.pinDir, tailCallsPin), nil)
	must(t, err)
	defer arr.Close()
	ai, err := arr.Info()
	must(t, err)
	ni, err := next.objs.Mux6Prog.Info()
	must(t, err)
	aid, _ := ai.ID()
	nid, _ := ni.ID()
	if aid != nid {
		t.Errorf("pinned IPv6 program array is map %d, want the successor's %d", aid, nid)
	}
}
