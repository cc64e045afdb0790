package dpbench

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/wire"
	"github.com/cilium/ebpf"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// The IPv6 rows (issue 16): the Beamer VIP's IPv6 twin, servers on
// 2001:db8::/64 resolved on the bench mux's eth0, forwarded in GUE over
// IPv6. A baseline built before issue 16 has no IPv6 path: no baseline
// figure then.
var (
	mux6Addr   = netip.MustParseAddr("2001:db8::1")
	beamerVIP6 = netip.MustParseAddr("2001:db8:100::1")
)

func serverAddr6(i int) netip.Addr {
	return netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(0x10 + i)})
}

// benchFlow6 is flow i of the IPv6 rows, as bpf/bench/mux6_bench.h
// rotate_flow6 writes it: i >> 14 in the source's last word, the port
// 1024 + the low 14 bits.
func benchFlow6(i uint32) wire.Flow {
	src := [16]byte{0x20, 0x01, 0x0d, 0xb8, 0x02}
	binary.BigEndian.PutUint32(src[12:], i>>14)
	return wire.Flow{Src: netip.AddrFrom16(src), Dst: beamerVIP6, SrcPort: uint16(1024 + i&0x3fff), DstPort: 80, Proto: wire.ProtoTCP}
}

// frame6 is an IPv6 TCP ACK of f in Ethernet (74 bytes).
func frame6(f wire.Flow) []byte {
	b := make([]byte, 14+40+20)
	copy(b, []byte{2, 0xbe, 0xa0, 0, 0, 1, 2, 0xbe, 0xa0, 0, 0, 0x99, 0x86, 0xdd})
	ip := b[14:]
	ip[0] = 0x60
	binary.BigEndian.PutUint16(ip[4:], 20)
	ip[6], ip[7] = 6, 64
	s, d := f.Src.As16(), f.Dst.As16()
	copy(ip[8:], s[:])
	copy(ip[24:], d[:])
	tcp := ip[40:]
	binary.BigEndian.PutUint16(tcp[0:], f.SrcPort)
	binary.BigEndian.PutUint16(tcp[2:], f.DstPort)
	binary.BigEndian.PutUint32(tcp[4:], 1)
	binary.BigEndian.PutUint32(tcp[8:], 1)
	tcp[12], tcp[13] = 5<<4, 0x10
	binary.BigEndian.PutUint16(tcp[14:], 65535)
	return b
}

// ipv6Setup gives the bench mux its IPv6 address and a resolved neighbour
// per IPv6 server.
func (r *rig) ipv6Setup() error {
	if err := r.ns.Sysctl("net.ipv6.conf.all.forwarding", "1"); err != nil {
		return err
	}
	nl := r.ns.Netlink()
	eth0, err := nl.LinkByIndex(r.ifindex)
	if err != nil {
		return err
	}
	a, err := netlink.ParseAddr(netip.PrefixFrom(mux6Addr, 64).String())
	if err != nil {
		return err
	}
	a.Flags = unix.IFA_F_NODAD
	if err := nl.AddrAdd(eth0, a); err != nil {
		return fmt.Errorf("IPv6 address: %w", err)
	}
	for i := 0; i < servers; i++ {
		mac := net.HardwareAddr{0x02, 0xbe, 0xa0, 0x00, 0x06, byte(i)}
		if err := nl.NeighSet(&netlink.Neigh{LinkIndex: r.ifindex, IP: net.IP(serverAddr6(i).AsSlice()), HardwareAddr: mac,
			State: netlink.NUD_PERMANENT, Family: netlink.FAMILY_V6}); err != nil {
			return fmt.Errorf("IPv6 neighbour: %w", err)
		}
	}
	return nil
}

// ipv6Rows measures the mux's IPv6 path at the first Beamer bucket count
// over the Beamer rows' flows: buckets never moved (16 bytes of private
// data) and every bucket moved once (one 16-byte previous owner).
func ipv6Rows(r *rig, o Options, ctx func([]byte) any, add func(string, int, int, trial, string) error) error {
	if err := r.ipv6Setup(); err != nil {
		return err
	}
	b := o.BeamerBuckets[0]
	for _, moved := range []int{0, 1} {
		cfg, table := beamerInstance(b, moved)
		cfg.VIPs, cfg.Encap = []netip.Addr{beamerVIP6}, forwarding.EncapGUE
		for id, s := range table.Servers {
			s.Addr = serverAddr6(int(id - 1025))
			table.Servers[id] = s
		}
		m, err := loadMux(cfg, table, 0, o)
		if err != nil {
			return err
		}
		if err := setBenchFlows(m, o.BeamerFlows); err != nil {
			m.Close()
			return err
		}
		var base *ebpf.Program
		if m.base != nil {
			base = m.base.Bench6Program()
		}
		f := frame6(benchFlow6(0))
		n := uint32(o.BeamerFlows)
		t := trial{ns: r.ns, prog: m.Bench6Program(), frame: f, ctx: ctx(f), want: xdpTX, repeat: o.Repeat, counter: "fwd_ipv6",
			read: m.Counters, single: m.Program(), packets: o.PerPacket, base: base,
			frameAt: func(seq uint32) []byte { return frame6(benchFlow6(benchOrder(seq%n, n))) }}
		name, what := "beamer-ipv6", "IPv6 in GUE over IPv6, no bucket ever moved: 16 bytes of private data"
		if moved > 0 {
			name, what = "beamer-ipv6-moved1", "IPv6 in GUE over IPv6, every bucket moved once: one 16-byte previous owner"
		}
		err = add(name, o.BeamerFlows, int(b), t, "test run, repeat; each repetition a new flow, encapsulation undone after it; per packet: the production program, through the IPv4 path's tail call; "+what)
		m.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
