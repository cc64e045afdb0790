package muxd

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/beamer-lb/beamer/pkg/dataplane"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
)

// A veth delivers the frames an XDP program sends back out of it (XDP_TX,
// every packet a mux forwards) only when its peer runs an XDP program too;
// without one they vanish, uncounted. Labs, containers and some VMs put a
// mux on a veth, so the mux gives the peer a program passing every packet
// (the kernel's own requirement, nothing else) when the peer has none.

// vethPeer is an XDP program this mux attached to its interface's peer.
type vethPeer struct {
	ns      netns.NsHandle
	ifindex int
	progID  ebpf.ProgramID
}

// prepareVethPeer attaches an XDP pass program to the peer of iface when
// iface is a veth and its peer has no XDP program. It returns nil when
// nothing was needed. mode is the mux's own attach mode: in generic mode
// the peer needs nothing.
func prepareVethPeer(iface string, mode dataplane.XDPMode, log *slog.Logger) (*vethPeer, error) {
	if mode == dataplane.XDPGeneric {
		return nil, nil
	}
	l, err := netlink.LinkByName(iface)
	if err != nil {
		return nil, err
	}
	veth, ok := l.(*netlink.Veth)
	if !ok {
		return nil, nil
	}
	peerIndex := veth.Attrs().ParentIndex // IFLA_LINK: the peer's ifindex in its namespace
	if peerIndex == 0 {
		if peerIndex, err = netlink.VethPeerIndex(veth); err != nil {
			return nil, fmt.Errorf("veth %s: its peer: %w", iface, err)
		}
	}
	ns, err := peerNamespace(veth.Attrs().NetNsID)
	if err != nil {
		return nil, fmt.Errorf("veth %s: the namespace of its peer (nsid %d): %w; give the peer an XDP program (any, e.g. one returning XDP_PASS) or run the mux with --xdp-mode generic", iface, veth.Attrs().NetNsID, err)
	}
	p := &vethPeer{ns: ns, ifindex: peerIndex}
	var peerName string
	err = inNetns(ns, func() error {
		peer, err := netlink.LinkByIndex(peerIndex)
		if err != nil {
			return err
		}
		peerName = peer.Attrs().Name
		if x := peer.Attrs().Xdp; x != nil && x.Attached {
			return errAlready
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "beamer_vethpass", Type: ebpf.XDP, License: "Dual BSD/GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
		})
		if err != nil {
			return err
		}
		defer prog.Close() // the attachment holds its own reference
		info, err := prog.Info()
		if err != nil {
			return err
		}
		p.progID, _ = info.ID()
		// Netlink, not a bpf_link: the program must outlive this process,
		// as the mux's pinned program does when the mux is killed.
		return netlink.LinkSetXdpFdWithFlags(peer, prog.FD(), nl.XDP_FLAGS_DRV_MODE|nl.XDP_FLAGS_UPDATE_IF_NOEXIST)
	})
	if errors.Is(err, errAlready) {
		ns.Close()
		log.Debug("mux: the veth peer already runs an XDP program", "interface", iface, "peer", peerName)
		return nil, nil
	}
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("veth %s: attaching an XDP pass program to its peer %s: %w (or run the mux with --xdp-mode generic)", iface, peerName, err)
	}
	log.Info("mux: attached an XDP pass program to the veth peer, which a veth needs to deliver XDP_TX frames", "interface", iface, "peer", peerName)
	return p, nil
}

var errAlready = errors.New("peer has an XDP program")

// remove detaches the program if it is still the one this mux attached.
func (p *vethPeer) remove() error {
	defer p.ns.Close()
	return inNetns(p.ns, func() error {
		peer, err := netlink.LinkByIndex(p.ifindex)
		if err != nil {
			return nil // gone with its veth
		}
		if x := peer.Attrs().Xdp; x == nil || !x.Attached || ebpf.ProgramID(x.ProgId) != p.progID {
			return nil // someone else's now
		}
		return netlink.LinkSetXdpFdWithFlags(peer, -1, nl.XDP_FLAGS_DRV_MODE)
	})
}

// release forgets the program, leaving it attached (an upgrade: the pinned
// mux program keeps forwarding and still needs it).
func (p *vethPeer) release() { p.ns.Close() }

// peerNamespace opens the namespace whose id, as seen from this one, is
// nsid (-1: this namespace). The kernel names it only by that id, so the
// candidates are the named namespaces and those of running processes.
func peerNamespace(nsid int) (netns.NsHandle, error) {
	if nsid < 0 {
		return netns.Get()
	}
	named, _ := filepath.Glob("/var/run/netns/*")
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	seen := map[uint64]bool{}
	for _, path := range append(named, procs...) {
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil || seen[st.Ino] {
			continue
		}
		seen[st.Ino] = true
		h, err := netns.GetFromPath(path)
		if err != nil {
			continue
		}
		if id, err := netlink.GetNetNsIdByFd(int(h)); err == nil && id == nsid {
			return h, nil
		}
		h.Close()
	}
	return 0, os.ErrNotExist
}

// inNetns runs fn on a thread inside ns.
func inNetns(ns netns.NsHandle, fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	if err := netns.Set(ns); err != nil {
		return err
	}
	ferr := fn()
	if err := netns.Set(orig); err != nil {
		panic(fmt.Sprintf("muxd: cannot return to the original network namespace: %v", err))
	}
	return ferr
}
