package dataplane

import (
	"fmt"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Record flags (bpf/include/mux_maps.h VIP_F_*).
const (
	vipFlagQUIC       = 0x01
	vipFlagEchoAnswer = 0x02
	vipFlagEchoPass   = 0x04
)

// portSets hands out the mux's port_sets entries (bpf/include/ports.h):
// the ranges of VIPs with more than the record holds. A VIP whose ranges
// change gets a new entry, written before the record that names it; the
// old entry is freed after the new record is published, and freed entries
// are reused oldest first, so a packet that read the old record a moment
// ago still finds what it meant.
type portSets struct {
	byVIP map[netip.Addr]uint16
	sets  map[netip.Addr]forwarding.VIPPorts
	free  []uint16
	next  uint16
}

// vipRecord builds vip's record for instance in (its slot, generation and
// port policy), writing its port set first when it needs one. The
// returned func frees the entry the VIP used before, once the record is
// published.
func (m *Mux) vipRecord(in *muxInstance, vip netip.Addr) (muxVipInfo, func(), error) {
	cfg := &in.cfg
	rec := muxVipInfo{
		Version:  uint64(in.table.Incarnation)<<32 | uint64(in.table.Generation),
		Table:    in.slot,
		Buckets:  cfg.Buckets,
		Strategy: cfg.Strategy.Code(),
		Encap:    cfg.EncapOf().Code(), // bpf/include/gue.h
	}
	if cfg.EncapOf() == forwarding.EncapGUE {
		rec.GuePort = cfg.GUEPortOf()
	}
	if ids := cfg.ServerIDs(); !ids.None {
		rec.IdLow, rec.IdHigh = ids.Low, ids.High
	}
	if q := cfg.QUIC; q != nil {
		rec.Flags |= vipFlagQUIC
		rec.QuicConfig, rec.QuicCidLen = q.ConfigID, q.CIDLen
		qp := q.QUICPorts()
		rec.QuicPorts.Low, rec.QuicPorts.High = qp.Low, qp.High
	}
	switch cfg.ICMPEcho {
	case forwarding.EchoAnswer:
		rec.Flags |= vipFlagEchoAnswer
	case forwarding.EchoPass:
		rec.Flags |= vipFlagEchoPass
	}

	ports := cfg.PortsOf(vip)
	type pr struct {
		r   forwarding.PortRange
		udp bool
	}
	var all []pr
	for _, r := range ports.TCP {
		all = append(all, pr{r, false})
	}
	for _, r := range ports.UDP {
		all = append(all, pr{r, true})
	}
	if len(all) > forwarding.MaxVIPRanges {
		return rec, nil, fmt.Errorf("VIP %v: %d port ranges, at most %d", vip, len(all), forwarding.MaxVIPRanges)
	}
	rec.N_ranges = uint8(len(all))
	ps := &m.ports
	if ps.byVIP == nil {
		ps.byVIP, ps.sets = map[netip.Addr]uint16{}, map[netip.Addr]forwarding.VIPPorts{}
	}
	old, hadOld := ps.byVIP[vip]
	release := func() {
		if hadOld {
			delete(ps.byVIP, vip)
			delete(ps.sets, vip)
			ps.free = append(ps.free, old)
		}
	}
	if len(all) <= forwarding.VIPRecordRanges {
		for i, p := range all {
			rec.Ranges[i].Low, rec.Ranges[i].High = p.r.Low, p.r.High
			if p.udp {
				rec.UdpMask |= 1 << i
			}
		}
		return rec, release, nil
	}
	if hadOld && samePorts(ps.sets[vip], ports) {
		rec.PortSet = old
		return rec, func() {}, nil
	}
	var idx uint16
	switch {
	case int(ps.next) < muxLimit().portSets:
		idx = ps.next // never-used entries first: freed ones age meanwhile
		ps.next++
	case len(ps.free) > 0:
		idx, ps.free = ps.free[0], ps.free[1:] // the one freed longest ago
	default:
		return rec, nil, fmt.Errorf("VIP %v: no free port set (%d in use)", vip, muxLimit().portSets)
	}
	var set muxPortSet
	set.N = uint8(len(all))
	for i, p := range all {
		set.R[i].Low, set.R[i].High = p.r.Low, p.r.High
		if p.udp {
			set.UdpMask |= 1 << i
		}
	}
	if err := m.objs.PortSets.Put(uint32(idx), &set); err != nil {
		return rec, nil, fmt.Errorf("writing the port set of VIP %v: %w", vip, err)
	}
	rec.PortSet = idx
	return rec, func() {
		release()
		ps.byVIP[vip], ps.sets[vip] = idx, ports
	}, nil
}

// forgetVIP frees the port set of a VIP no longer published.
func (m *Mux) forgetVIP(vip netip.Addr) {
	if idx, ok := m.ports.byVIP[vip]; ok {
		delete(m.ports.byVIP, vip)
		delete(m.ports.sets, vip)
		m.ports.free = append(m.ports.free, idx)
	}
}

func samePorts(a, b forwarding.VIPPorts) bool {
	eq := func(x, y forwarding.PortList) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return eq(a.TCP, b.TCP) && eq(a.UDP, b.UDP)
}
