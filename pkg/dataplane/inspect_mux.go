package dataplane

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// MuxView is what a mux forwards with now, read from the kernel through
// its pinned link (inspect.go): its VIPs, their tables and its counters.
type MuxView struct {
	PinDir    string            `json:"pin_dir"`
	ProgramID uint32            `json:"program_id"`
	VIPs      []MuxVIPView      `json:"vips"`
	Tables    []MuxTableView    `json:"tables"`
	Counters  map[string]uint64 `json:"counters"` // decisions, summed over CPUs (beamer_mux_packets_total)
}

// MuxVIPView is one VIP record as the program reads it.
type MuxVIPView struct {
	VIP         netip.Addr `json:"vip"`
	Table       uint32     `json:"table"`
	Buckets     uint32     `json:"buckets"`
	Strategy    string     `json:"strategy"`
	Encap       string     `json:"encap"` // "ipip" or "gue:PORT"
	Ports       []string   `json:"ports"` // "LOW-HIGH/tcp+udp"
	MPTCPIDs    string     `json:"mptcp_server_ids,omitempty"`
	Generation  uint32     `json:"generation"`
	Incarnation uint32     `json:"incarnation"`
	// Traffic forwarded for the VIP since it was published (nil: not
	// counted, or a mux without per-VIP counters).
	Traffic *MuxVIPTraffic `json:"traffic,omitempty"`
}

// MuxTableView is one instance's tables in the kernel: the bucket table
// and the server table its VIPs name.
type MuxTableView struct {
	Table   uint32 `json:"table"`
	Buckets uint32 `json:"buckets"`
	// Moved counts buckets with a history (previous owners the option
	// names); Unowned buckets whose word names no server of the table
	// (their packets are dropped).
	Moved   int             `json:"moved"`
	Unowned int             `json:"unowned"`
	Servers []MuxServerView `json:"servers"`
}

// MuxServerView is one server word of a table.
type MuxServerView struct {
	ID      forwarding.ServerID `json:"id"`
	Addr    netip.Addr          `json:"addr"`
	State   string              `json:"state"`
	Buckets int                 `json:"buckets"` // buckets it owns now
	Packets uint64              `json:"packets,omitempty"`
	Bytes   uint64              `json:"bytes,omitempty"`
}

// InspectMux reads the mux pinned in pinDir.
func InspectMux(pinDir string) (*MuxView, error) {
	spec, err := loadMux()
	if err != nil {
		return nil, err
	}
	p, err := openPinned(pinDir, "beamer_mux", spec)
	if err != nil {
		return nil, err
	}
	defer p.close()
	pinfo, _ := p.prog.Info()
	id, _ := pinfo.ID()
	v := &MuxView{PinDir: pinDir, ProgramID: uint32(id)}

	counters, err := p.mapNamed("mux_counters")
	if err != nil {
		return nil, err
	}
	cs, err := newCounterSet(spec, counters, "mux_counter", "MUX_")
	if err != nil {
		return nil, err
	}
	if v.Counters, err = cs.Read(); err != nil {
		return nil, err
	}
	if v.VIPs, err = p.muxVIPs(cs.Names()); err != nil {
		return nil, err
	}
	tables := map[uint32]bool{}
	for _, vip := range v.VIPs {
		if tables[vip.Table] {
			continue
		}
		tables[vip.Table] = true
		t, err := p.muxTable(vip)
		if err != nil {
			return nil, fmt.Errorf("table %d (VIP %v): %w", vip.Table, vip.VIP, err)
		}
		v.Tables = append(v.Tables, t)
	}
	slices.SortFunc(v.Tables, func(a, b MuxTableView) int { return int(a.Table) - int(b.Table) })
	return v, nil
}

// muxVIPs walks both families' VIP fronts to the records they name.
func (p *pinnedProgram) muxVIPs(counterNames []string) ([]MuxVIPView, error) {
	records, err := p.mapNamed("vip_records")
	if err != nil {
		return nil, err
	}
	traffic, err := p.optionalMap("mux_vip_traffic")
	if err != nil {
		return nil, err
	}
	var out []MuxVIPView
	for _, family := range []struct {
		front string
		six   bool
	}{{"vip_front", false}, {"vip6_front", true}} {
		front, err := p.optionalMap(family.front)
		if err != nil {
			return nil, err
		}
		if front == nil {
			if !family.six {
				return nil, fmt.Errorf("the pinned program has no map %s: it was loaded by another version of beamer", family.front)
			}
			continue // a mux without an IPv6 address loads no IPv6 path
		}
		words, err := readWords(front)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", family.front, err)
		}
		for _, w := range words {
			if w>>32 == 0 {
				continue
			}
			r := uint32(w>>32) - 1
			var rec muxVipRecord
			if err := records.Lookup(r, &rec); err != nil {
				return nil, fmt.Errorf("VIP record %d: %w", r, err)
			}
			addr, err := p.vipAddr(uint32(w), r, family.six)
			if err != nil {
				return nil, err
			}
			vv := muxVIPView(addr, &rec.Info)
			if traffic != nil && rec.Info.Stats != 0 {
				var per []muxVipTraffic
				if err := traffic.Lookup(uint32(rec.Info.Stats-1), &per); err != nil {
					return nil, fmt.Errorf("traffic of VIP %v: %w", addr, err)
				}
				t := sumVIPTraffic(per, counterNames)
				t.VIP = addr
				vv.Traffic = &t
			}
			out = append(out, vv)
		}
	}
	slices.SortFunc(out, func(a, b MuxVIPView) int { return a.VIP.Compare(b.VIP) })
	return out, nil
}

// vipAddr is the address of a front word: IPv4 VIPs are in the word as the
// packet holds them; an IPv6 VIP's whole address is by record.
func (p *pinnedProgram) vipAddr(raw, record uint32, six bool) (netip.Addr, error) {
	if !six {
		var a [4]byte
		binary.LittleEndian.PutUint32(a[:], raw)
		return netip.AddrFrom4(a), nil
	}
	addrs, err := p.mapNamed("vip6_addrs")
	if err != nil {
		return netip.Addr{}, err
	}
	var a [16]byte
	if err := addrs.Lookup(record, &a); err != nil {
		return netip.Addr{}, fmt.Errorf("address of IPv6 VIP record %d: %w", record, err)
	}
	return netip.AddrFrom16(a), nil
}

func muxVIPView(addr netip.Addr, in *muxVipInfo) MuxVIPView {
	v := MuxVIPView{VIP: addr, Table: in.Table, Buckets: in.Buckets, Strategy: strategyName(in.Strategy),
		Generation: uint32(in.Version), Incarnation: uint32(in.Version >> 32), Encap: "ipip"}
	if in.Encap != 0 {
		v.Encap = fmt.Sprintf("gue:%d", in.GuePort)
	}
	if in.IdLow != 0 {
		v.MPTCPIDs = fmt.Sprintf("%d-%d", in.IdLow, in.IdHigh)
	}
	if int(in.N_ranges) > len(in.Ranges) {
		v.Ports = []string{fmt.Sprintf("%d ranges (port set %d)", in.N_ranges, in.PortSet)}
	}
	for i := 0; i < int(in.N_ranges) && i < len(in.Ranges); i++ {
		proto := "tcp"
		if in.UdpMask&(1<<i) != 0 {
			proto = "udp"
		}
		v.Ports = append(v.Ports, fmt.Sprintf("%d-%d/%s", in.Ranges[i].Low, in.Ranges[i].High, proto))
	}
	return v
}

// strategyName is the strategy of a record's code.
func strategyName(code uint8) string {
	for _, s := range forwarding.Strategies() {
		if s.Code() == code {
			return string(s)
		}
	}
	return fmt.Sprintf("unknown(%d)", code)
}

// muxTable reads the bucket and server tables the VIP's record names.
func (p *pinnedProgram) muxTable(vip MuxVIPView) (MuxTableView, error) {
	t := MuxTableView{Table: vip.Table}
	servers, err := p.serverWords(vip)
	if err != nil {
		return t, err
	}
	outer, err := p.mapNamed("bucket_tables")
	if err != nil {
		return t, err
	}
	inner, err := innerMap(outer, vip.Table)
	if err != nil || inner == nil {
		return t, fmt.Errorf("no bucket table in slot %d (%v)", vip.Table, err)
	}
	defer inner.Close()
	words, err := readWords(inner)
	if err != nil {
		return t, err
	}
	b, q := vip.Buckets, (vip.Buckets+3)/4
	if q+b > uint32(len(words)) {
		return t, fmt.Errorf("the record says %d buckets, the table holds %d words", b, len(words))
	}
	t.Buckets = b
	owned := map[forwarding.ServerID]int{}
	for i := range b {
		w := bucketWordAt(words, q, i)
		if uint16(words[i/4]>>(16*(i%4))) == bucketMoved {
			t.Moved++
		}
		id := forwarding.ServerID(uint16(w))
		if _, ok := servers[id]; !ok {
			t.Unowned++
			continue
		}
		owned[id]++
	}
	var stats map[uint16]muxServerTraffic
	if st, err := p.optionalMap("mux_server_traffic"); err == nil && st != nil {
		stats = map[uint16]muxServerTraffic{}
		for _, s := range servers {
			if s.stat == 0 {
				continue
			}
			var per []muxServerTraffic
			if err := st.Lookup(uint32(s.stat-1), &per); err == nil {
				stats[s.stat] = sumServerTraffic(per)
			}
		}
	}
	for id, s := range servers {
		sv := MuxServerView{ID: id, Addr: s.addr, State: s.state.String(), Buckets: owned[id]}
		if c, ok := stats[s.stat]; ok {
			sv.Packets, sv.Bytes = c.Packets, c.Bytes
		}
		t.Servers = append(t.Servers, sv)
	}
	slices.SortFunc(t.Servers, func(a, b MuxServerView) int { return int(a.ID) - int(b.ID) })
	return t, nil
}

// bucketWordAt is bucket i's word as the program reads it (bucketArray.get).
func bucketWordAt(words []uint64, q, i uint32) uint64 {
	switch e := uint16(words[i/4] >> (16 * (i % 4))); e {
	case bucketMoved:
		return words[q+i]
	case bucketNone:
		return 0
	default:
		return uint64(e)
	}
}

type serverWordView struct {
	addr  netip.Addr
	state forwarding.ServerState
	stat  uint16
}

// serverWords decodes the table's server words (servers6.go's layout).
func (p *pinnedProgram) serverWords(vip MuxVIPView) (map[forwarding.ServerID]serverWordView, error) {
	outer, err := p.mapNamed("server_tables")
	if err != nil {
		return nil, err
	}
	inner, err := innerMap(outer, vip.Table)
	if err != nil || inner == nil {
		return nil, fmt.Errorf("no server table in slot %d (%v)", vip.Table, err)
	}
	defer inner.Close()
	words, err := readWords(inner)
	if err != nil {
		return nil, err
	}
	six := vip.VIP.Is6() && !vip.VIP.Is4In6()
	var addrs6 map[uint32][16]byte
	if six {
		o6, err := p.mapNamed("server6_tables")
		if err != nil {
			return nil, err
		}
		in6, err := innerMap(o6, vip.Table)
		if err != nil || in6 == nil {
			return nil, fmt.Errorf("no IPv6 server array in slot %d (%v)", vip.Table, err)
		}
		defer in6.Close()
		addrs6 = map[uint32][16]byte{}
		for id, w := range words {
			if w == 0 {
				continue
			}
			var a [16]byte
			if err := in6.Lookup(uint32(id), &a); err == nil {
				addrs6[uint32(id)] = a
			}
		}
	}
	out := map[forwarding.ServerID]serverWordView{}
	for id, w := range words {
		if w == 0 {
			continue
		}
		s := serverWordView{state: forwarding.ServerState(uint8(w >> 32)), stat: uint16(w >> 48)}
		if six {
			s.addr = netip.AddrFrom16(addrs6[uint32(id)])
		} else {
			var a [4]byte
			binary.LittleEndian.PutUint32(a[:], uint32(w))
			s.addr = netip.AddrFrom4(a)
		}
		out[forwarding.ServerID(id)] = s
	}
	return out, nil
}
