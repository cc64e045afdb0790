package netlab

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
)

// Bridge creates a bridge in the namespace, enslaves the given devices and
// brings it up: the lab's layer-2 fabric.
func (ns *Namespace) Bridge(name string, ports ...string) error {
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	br := &netlink.Bridge{LinkAttrs: attrs}
	if err := ns.nl.LinkAdd(br); err != nil {
		return fmt.Errorf("netlab: bridge %s in %s: %w", name, ns.Name, err)
	}
	for _, p := range ports {
		l, err := ns.nl.LinkByName(p)
		if err != nil {
			return fmt.Errorf("netlab: %s in %s: %w", p, ns.Name, err)
		}
		if err := ns.nl.LinkSetMaster(l, br); err != nil {
			return fmt.Errorf("netlab: enslaving %s to %s: %w", p, name, err)
		}
	}
	return ns.nl.LinkSetUp(br)
}

// AttachXDPPass attaches an XDP program that passes every packet to a
// device. A veth only delivers frames another veth's XDP program sent with
// XDP_TX or redirect when its own side has an XDP program too.
func (ns *Namespace) AttachXDPPass(dev string) (link.Link, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Name:         "xdp_pass",
		Type:         ebpf.XDP,
		License:      "Dual BSD/GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2 /* XDP_PASS */), asm.Return()},
	})
	if err != nil {
		return nil, err
	}
	defer prog.Close() // the link holds its own reference
	idx, err := ns.LinkIndex(dev)
	if err != nil {
		return nil, err
	}
	var l link.Link
	err = ns.Do(func() error {
		l, err = link.AttachXDP(link.XDPOptions{Program: prog, Interface: idx, Flags: link.XDPDriverMode})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("netlab: XDP pass on %s in %s: %w", dev, ns.Name, err)
	}
	return l, nil
}

// DisableTxChecksum turns off transmit checksum offload on a device: a veth
// that offloads leaves the TCP checksum to be filled in later, and a packet
// an XDP program forwards on the way arrives with it unfilled.
func (ns *Namespace) DisableTxChecksum(dev string) error {
	_, err := ns.Run("ethtool", "-K", dev, "tx", "off")
	return err
}
