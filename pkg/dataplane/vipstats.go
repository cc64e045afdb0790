package dataplane

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// VIPStats counts a server's traffic per VIP (bpf/vipstats.c): a tc
// program first in the interface's tcx ingress chain, before the agent,
// that only counts. Its counters live as long as this process.
type VIPStats struct {
	objs vipStatsObjects
	link link.Link
	vips []netip.Addr
}

// VIPTraffic is what a server received for one VIP, since the counter was
// loaded: from muxes (or decapsulated already), and daisy-chained to it by
// other servers. Bytes are the clients' packets (inner IPv4 total length,
// or IPv6 payload length + 40).
type VIPTraffic struct {
	Packets        uint64 `json:"packets"`
	Bytes          uint64 `json:"bytes"`
	ChainedPackets uint64 `json:"chained_packets"`
	ChainedBytes   uint64 `json:"chained_bytes"`
}

// LoadVIPStats loads the counter for vips and attaches it to the ingress of
// the interface with index ifindex, ahead of every other tcx program.
func LoadVIPStats(ifindex int, vips []netip.Addr) (*VIPStats, error) {
	s, err := newVIPStats(vips)
	if err != nil {
		return nil, err
	}
	l, err := link.AttachTCX(link.TCXOptions{Program: s.objs.BeamerVipstats, Attach: ebpf.AttachTCXIngress,
		Interface: ifindex, Anchor: link.Head()})
	if err != nil {
		s.objs.Close()
		return nil, fmt.Errorf("attaching the per-VIP counter: %w", err)
	}
	s.link = l
	return s, nil
}

// newVIPStats loads the counter with a zero entry per VIP, unattached.
func newVIPStats(vips []netip.Addr) (*VIPStats, error) {
	s := &VIPStats{vips: vips}
	if err := loadVipStatsObjects(&s.objs, nil); err != nil {
		return nil, fmt.Errorf("loading the per-VIP counter: %w", err)
	}
	zero := make([]vipStatsVipStatsVal, ebpf.MustPossibleCPU())
	for _, v := range vips {
		for _, chained := range []uint32{0, 1} {
			var err error
			if is6(v) {
				k := vipStats6Key(v, chained)
				err = s.objs.VipStats6.Put(&k, zero)
			} else {
				k := vipStatsKey(v, chained)
				err = s.objs.VipStats.Put(&k, zero)
			}
			if err != nil {
				s.objs.Close()
				return nil, fmt.Errorf("per-VIP counter for %v: %w", v, err)
			}
		}
	}
	return s, nil
}

func vipStatsKey(v netip.Addr, chained uint32) vipStatsVipStatsKey {
	b := v.As4()
	// The key holds the address in network order, as the packet does.
	return vipStatsVipStatsKey{Vip: binary.NativeEndian.Uint32(b[:]), Chained: chained}
}

// vipStats6Key is the key of an IPv6 VIP (bpf/vipstats.c vip_stats6).
func vipStats6Key(v netip.Addr, chained uint32) vipStatsVipStats6Key {
	var k vipStatsVipStats6Key
	k.Vip.In6U.U6Addr8 = v.As16()
	k.Chained = chained
	return k
}

// Read sums the per-CPU counters of every VIP.
func (s *VIPStats) Read() (map[netip.Addr]VIPTraffic, error) {
	out := map[netip.Addr]VIPTraffic{}
	for _, v := range s.vips {
		var t VIPTraffic
		for _, chained := range []uint32{0, 1} {
			var per []vipStatsVipStatsVal
			var err error
			if is6(v) {
				k := vipStats6Key(v, chained)
				err = s.objs.VipStats6.Lookup(&k, &per)
			} else {
				k := vipStatsKey(v, chained)
				err = s.objs.VipStats.Lookup(&k, &per)
			}
			if err != nil {
				return nil, fmt.Errorf("per-VIP counter of %v: %w", v, err)
			}
			for _, c := range per {
				if chained == 1 {
					t.ChainedPackets += c.Packets
					t.ChainedBytes += c.Bytes
				} else {
					t.Packets += c.Packets
					t.Bytes += c.Bytes
				}
			}
		}
		out[v] = t
	}
	return out, nil
}

// Close detaches and frees the counter.
func (s *VIPStats) Close() error {
	var errs []error
	if s.link != nil {
		errs = append(errs, s.link.Close())
	}
	errs = append(errs, s.objs.Close())
	return errors.Join(errs...)
}
