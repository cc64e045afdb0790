package dataplane

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"unsafe"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// MuxInspection is what a mux's pinned program forwards, read from its
// maps (inspect_maps.go): `beamer mux inspect`. One more map is one more
// field here, filled in InspectMux from p.mapNamed(NAME, optional) (which
// checks the map against this build's layout) and decoded with the Go type
// the daemon writes it with; the printer in cmd/beamer/status_inspect.go
// shows it.
type MuxInspection struct {
	PinDir   string      `json:"pin_dir"`
	Program  ProgramView `json:"program"`
	Tables   []MuxTable  `json:"tables"`
	Counters Counters    `json:"counters"`
	NextHops []NextHop   `json:"next_hops"`
	// PublishedNextHops are the next hops the daemon published (both
	// families; nexthop_table.go), Current always true.
	PublishedNextHops []NextHop `json:"published_next_hops"`
}

// Counters are decision counters summed over CPUs, by name.
type Counters map[string]uint64

// MuxTable is one instance's tables in the kernel (an instance's VIPs
// share them): ctl show NAME lists the same owners and counts.
type MuxTable struct {
	Slot     uint32       `json:"slot"`
	VIPs     []VIPVersion `json:"vips"`
	Strategy string       `json:"strategy"`
	Encap    string       `json:"encap"`
	GUEPort  uint16       `json:"gue_port,omitempty"`
	Ports    []string     `json:"ports"`
	Buckets  uint32       `json:"buckets"`
	// Servers are the servers of the server table, with the buckets
	// whose current owner each is.
	Servers []ServerBuckets `json:"servers"`
	Unowned int             `json:"unowned_buckets"`
	// Chained counts buckets with a history (previous owners), and
	// PreviousOwners how many of those histories name each server.
	Chained        int             `json:"chained_buckets"`
	PreviousOwners []ServerBuckets `json:"previous_owners"`
	ChainsMissing  int             `json:"chains_missing,omitempty"`
}

// VIPVersion is a VIP with the version its record carries, and the
// traffic the mux forwarded for it since it was published (nil: not
// counted apart; bpf/include/vip_traffic.h).
type VIPVersion struct {
	VIP         netip.Addr    `json:"vip"`
	Incarnation uint32        `json:"incarnation"`
	Generation  uint32        `json:"generation"`
	Traffic     *MuxVIPCounts `json:"traffic,omitempty"`
}

// ServerBuckets is a server id, its address and state where the table has
// it, and a count of buckets.
type ServerBuckets struct {
	ID      forwarding.ServerID `json:"id"`
	Addr    string              `json:"address,omitempty"`
	State   string              `json:"state,omitempty"`
	Buckets int                 `json:"buckets"`
	// Traffic forwarded to it (over the instance's VIPs) since it was
	// added with this address; servers only.
	Packets uint64 `json:"packets,omitempty"`
	Bytes   uint64 `json:"bytes,omitempty"`
}

// NextHop is an entry of the mux's next-hop cache (of any CPU).
type NextHop struct {
	Addr    netip.Addr `json:"address"`
	Ifindex uint32     `json:"ifindex"`
	MAC     string     `json:"mac"`
	MTU     uint32     `json:"mtu"`
	Current bool       `json:"current"` // filled in the current epoch
}

// InspectMux reads the mux pinned at dir (its --pin-dir).
func InspectMux(dir string) (*MuxInspection, error) {
	spec, err := loadMux()
	if err != nil {
		return nil, err
	}
	// The pinned state maps first: a layout of another version is named
	// even when the link is gone.
	for _, name := range muxStateMaps {
		m, err := pinnedMap(dir, name, spec)
		if err != nil {
			return nil, err
		}
		if m != nil {
			m.Close()
		}
	}
	p, err := openPinnedProgram(dir, spec, "beamer_mux")
	if err != nil {
		return nil, err
	}
	defer p.close()
	out := &MuxInspection{PinDir: dir, Program: p.prog}
	if out.Counters, err = p.counters(spec, "mux_counters", "mux_counter", "MUX_"); err != nil {
		return nil, err
	}
	if out.Tables, err = p.muxTables(spec); err != nil {
		return nil, err
	}
	if out.NextHops, err = p.nextHops(); err != nil {
		return nil, err
	}
	if out.PublishedNextHops, err = p.publishedNextHops(); err != nil {
		return nil, err
	}
	return out, nil
}

// counters sums the per-CPU counter map name, named after enumName.
func (p *pinnedProgram) counters(spec *ebpf.CollectionSpec, name, enumName, prefix string) (Counters, error) {
	m, err := p.mapNamed(name, false)
	if err != nil {
		return nil, err
	}
	cs, err := newCounterSet(spec, m, enumName, prefix)
	if err != nil {
		return nil, fmt.Errorf("map %s at %s: %w: pinned by another beamer version?", name, p.dir, err)
	}
	return cs.Read()
}

// muxTables reads the VIP fronts, their records and the tables they name.
func (p *pinnedProgram) muxTables(spec *ebpf.CollectionSpec) ([]MuxTable, error) {
	names, err := counterNames(spec, "mux_counter", "MUX_")
	if err != nil {
		return nil, err
	}
	maps := map[string]*ebpf.Map{}
	for _, name := range []string{"vip_front", "vip_records", "bucket_tables", "server_tables", "chain_tables", "port_sets"} {
		m, err := p.mapNamed(name, false)
		if err != nil {
			return nil, err
		}
		maps[name] = m
	}
	for _, name := range []string{"vip6_front", "vip6_addrs", "server6_tables", "mux_vip_traffic", "mux_server_traffic"} {
		m, err := p.mapNamed(name, true)
		if err != nil {
			return nil, err
		}
		maps[name] = m
	}
	records, err := readWords(maps["vip_records"])
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(records.mem)
	bySlot := map[uint32]*MuxTable{}
	var order []uint32
	for _, family := range []string{"vip_front", "vip6_front"} {
		if maps[family] == nil {
			continue
		}
		front, err := readWords(maps[family])
		if err != nil {
			return nil, err
		}
		for w := range front.n {
			word := front.load(w)
			if word == 0 {
				continue
			}
			r := uint32(word>>32) - 1
			if int(r) >= muxLimit().vipRecords {
				unix.Munmap(front.mem)
				return nil, fmt.Errorf("VIP front word %d names record %d of %d", w, r, muxLimit().vipRecords)
			}
			rec := *(*muxVipInfo)(unsafe.Pointer(&records.mem[int(r)*muxLimit().vipRecordLen]))
			vip, err := frontVIP(word, r, maps["vip6_addrs"], family == "vip6_front")
			if err != nil {
				unix.Munmap(front.mem)
				return nil, err
			}
			t := bySlot[rec.Table]
			if t == nil {
				if t, err = p.muxTable(rec, maps); err != nil {
					unix.Munmap(front.mem)
					return nil, err
				}
				bySlot[rec.Table] = t
				order = append(order, rec.Table)
			}
			v := VIPVersion{VIP: vip, Incarnation: uint32(rec.Version >> 32), Generation: uint32(rec.Version)}
			if tm := maps["mux_vip_traffic"]; tm != nil && rec.Stats != 0 {
				var per []muxVipTraffic
				if err := tm.Lookup(uint32(rec.Stats-1), &per); err != nil {
					unix.Munmap(front.mem)
					return nil, fmt.Errorf("traffic of VIP %v: %w", vip, err)
				}
				traffic := sumVIPTraffic(per, names)
				v.Traffic = &traffic
			}
			t.VIPs = append(t.VIPs, v)
		}
		unix.Munmap(front.mem)
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	out := make([]MuxTable, 0, len(order))
	for _, s := range order {
		t := bySlot[s]
		sort.Slice(t.VIPs, func(i, j int) bool { return t.VIPs[i].VIP.Less(t.VIPs[j].VIP) })
		out = append(out, *t)
	}
	return out, nil
}

// frontVIP is the VIP of a front word: an IPv4 VIP's address is in the
// word (frontWord), an IPv6 VIP's in vip6_addrs by record.
func frontVIP(word uint64, record uint32, addrs6 *ebpf.Map, six bool) (netip.Addr, error) {
	if !six {
		var a [4]byte
		binary.LittleEndian.PutUint32(a[:], uint32(word))
		return netip.AddrFrom4(a), nil
	}
	if addrs6 == nil {
		return netip.Addr{}, fmt.Errorf("IPv6 VIP front word without the vip6_addrs map")
	}
	var a [16]byte
	if err := addrs6.Lookup(record, &a); err != nil {
		return netip.Addr{}, fmt.Errorf("address of IPv6 VIP record %d: %w", record, err)
	}
	return netip.AddrFrom16(a), nil
}

// muxTable decodes the tables of one record's slot.
func (p *pinnedProgram) muxTable(rec muxVipInfo, maps map[string]*ebpf.Map) (*MuxTable, error) {
	t := &MuxTable{Slot: rec.Table, Buckets: rec.Buckets, Strategy: strategyName(rec.Strategy), Encap: string(forwarding.EncapIPIP)}
	if rec.Encap == forwarding.EncapGUE.Code() {
		t.Encap, t.GUEPort = string(forwarding.EncapGUE), rec.GuePort
	}
	var err error
	if t.Ports, err = recordPorts(rec, maps["port_sets"]); err != nil {
		return nil, err
	}
	bm, err := innerMap(maps["bucket_tables"], rec.Table)
	if err != nil || bm == nil {
		return nil, fmt.Errorf("bucket table of slot %d: %v", rec.Table, orMissing(err))
	}
	defer bm.Close()
	words, err := readWords(bm)
	if err != nil {
		return nil, err
	}
	defer unix.Munmap(words.mem)
	q := (rec.Buckets + 3) / 4
	if uint64(q)+uint64(rec.Buckets) > uint64(words.n) {
		return nil, fmt.Errorf("bucket table of slot %d: %d words, too few for %d buckets", rec.Table, words.n, rec.Buckets)
	}
	buckets := &bucketArray{words: words, b: rec.Buckets, q: q}
	owned := map[forwarding.ServerID]int{}
	refs := map[uint16]int{}
	for i := range rec.Buckets {
		w := buckets.get(i)
		if id := forwarding.ServerID(uint16(w)); id == 0 {
			t.Unowned++
		} else {
			owned[id]++
		}
		if r := wordRef(w); r != 0 {
			t.Chained++
			refs[r]++
		}
	}
	if err := t.previousOwners(refs, maps["chain_tables"]); err != nil {
		return nil, err
	}
	return t, t.servers(owned, maps)
}

func orMissing(err error) error {
	if err == nil {
		return fmt.Errorf("not loaded")
	}
	return err
}

// previousOwners counts, per server, the buckets whose history names it.
func (t *MuxTable) previousOwners(refs map[uint16]int, chains *ebpf.Map) error {
	cm, err := innerMap(chains, t.Slot)
	if err != nil {
		return fmt.Errorf("chain table of slot %d: %w", t.Slot, err)
	}
	if cm == nil {
		t.ChainsMissing = t.Chained
		return nil
	}
	defer cm.Close()
	prev := map[forwarding.ServerID]int{}
	for r, n := range refs {
		var e [16]byte
		if err := cm.Lookup(uint32(r), &e); err != nil {
			t.ChainsMissing += n
			continue
		}
		for _, id := range chainOfEntry(e) {
			if id != 0 {
				prev[id] += n
			}
		}
	}
	for id, n := range prev {
		t.PreviousOwners = append(t.PreviousOwners, ServerBuckets{ID: id, Buckets: n})
	}
	sort.Slice(t.PreviousOwners, func(i, j int) bool { return t.PreviousOwners[i].ID < t.PreviousOwners[j].ID })
	return nil
}

// chainOfEntry is the inverse of chainEntry.
func chainOfEntry(e [16]byte) forwarding.Chain {
	var c forwarding.Chain
	for i := range min(int(e[0]), len(c)) {
		c[i] = forwarding.ServerID(binary.LittleEndian.Uint16(e[2+2*i:]))
	}
	return c
}

// servers lists the server table's servers with the buckets they own
// (and owners missing from the server table, which the mux drops).
func (t *MuxTable) servers(owned map[forwarding.ServerID]int, maps map[string]*ebpf.Map) error {
	sm, err := innerMap(maps["server_tables"], t.Slot)
	if err != nil || sm == nil {
		return fmt.Errorf("server table of slot %d: %v", t.Slot, orMissing(err))
	}
	defer sm.Close()
	words, err := readWords(sm)
	if err != nil {
		return err
	}
	defer unix.Munmap(words.mem)
	// An IPv6 instance keeps its servers' whole addresses beside the
	// words (servers6.go); an IPv4 one has no map there.
	var s6 *ebpf.Map
	if maps["server6_tables"] != nil {
		if s6, err = innerMap(maps["server6_tables"], t.Slot); err != nil {
			s6 = nil
		}
		if s6 != nil {
			defer s6.Close()
		}
	}
	seen := map[forwarding.ServerID]bool{}
	for id := uint32(forwarding.MinServerID); id < words.n; id++ {
		sv, ok := forwarding.UnpackServer(words.load(id))
		if !ok {
			continue
		}
		addr := sv.Addr
		var a [16]byte
		if s6 != nil && s6.Lookup(id, &a) == nil && a != [16]byte{} {
			addr = netip.AddrFrom16(a)
		}
		sid := forwarding.ServerID(id)
		seen[sid] = true
		sb := ServerBuckets{ID: sid, Addr: addr.String(), State: sv.State.String(), Buckets: owned[sid]}
		if tm, stat := maps["mux_server_traffic"], uint16(words.load(id)>>48); tm != nil && stat != 0 {
			var per []muxServerTraffic
			if err := tm.Lookup(uint32(stat-1), &per); err == nil {
				sum := sumServerTraffic(per)
				sb.Packets, sb.Bytes = sum.Packets, sum.Bytes
			}
		}
		t.Servers = append(t.Servers, sb)
	}
	for id, n := range owned {
		if !seen[id] {
			t.Servers = append(t.Servers, ServerBuckets{ID: id, State: "not in the server table", Buckets: n})
		}
	}
	sort.Slice(t.Servers, func(i, j int) bool { return t.Servers[i].ID < t.Servers[j].ID })
	return nil
}

// strategyName is the strategy of a VIP record's code.
func strategyName(code uint8) string {
	for _, s := range forwarding.Strategies() {
		if s.Code() == code {
			return string(s)
		}
	}
	return fmt.Sprintf("unknown(%d)", code)
}

// recordPorts lists a VIP record's service port ranges ("tcp 80",
// "udp 5000-5010"), from the record or its port set.
func recordPorts(rec muxVipInfo, portSets *ebpf.Map) ([]string, error) {
	type rng struct{ low, high uint16 }
	var rs []rng
	udp := uint32(rec.UdpMask)
	if int(rec.N_ranges) <= len(rec.Ranges) {
		for _, r := range rec.Ranges[:rec.N_ranges] {
			rs = append(rs, rng{r.Low, r.High})
		}
	} else {
		var ps muxPortSet
		if err := portSets.Lookup(uint32(rec.PortSet), &ps); err != nil {
			return nil, fmt.Errorf("port set %d: %w", rec.PortSet, err)
		}
		udp = uint32(ps.UdpMask)
		for _, r := range ps.R[:min(int(ps.N), len(ps.R))] {
			rs = append(rs, rng{r.Low, r.High})
		}
	}
	out := make([]string, 0, len(rs))
	for i, r := range rs {
		proto := "tcp"
		if udp&(1<<i) != 0 {
			proto = "udp"
		}
		if r.low == r.high {
			out = append(out, fmt.Sprintf("%s %d", proto, r.low))
		} else {
			out = append(out, fmt.Sprintf("%s %d-%d", proto, r.low, r.high))
		}
	}
	if rec.IdLow != 0 {
		out = append(out, fmt.Sprintf("tcp %d-%d (server ids)", rec.IdLow, rec.IdHigh))
	}
	return out, nil
}

// nextHops lists the IPv4 next-hop cache's entries over all CPUs, one per
// (address, interface, MAC).
func (p *pinnedProgram) nextHops() ([]NextHop, error) {
	cache, err := p.mapNamed("nexthop_cache", true)
	if err != nil || cache == nil {
		return nil, err
	}
	var epoch uint64
	if em, err := p.mapNamed("nexthop_epoch", true); err == nil && em != nil {
		em.Lookup(uint32(0), &epoch)
	}
	seen := map[NextHop]bool{}
	var out []NextHop
	var perCPU []muxNexthop
	for slot := range cache.MaxEntries() {
		if err := cache.Lookup(slot, &perCPU); err != nil {
			return nil, fmt.Errorf("next-hop cache slot %d: %w", slot, err)
		}
		for _, e := range perCPU {
			if e.Daddr == 0 {
				continue
			}
			var a [4]byte
			binary.LittleEndian.PutUint32(a[:], e.Daddr)
			h := NextHop{Addr: netip.AddrFrom4(a), Ifindex: e.Ifindex, MAC: net.HardwareAddr(e.Dmac[:]).String(), MTU: e.Mtu, Current: e.Epoch == epoch}
			if !seen[h] {
				seen[h] = true
				out = append(out, h)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Addr != out[j].Addr {
			return out[i].Addr.Less(out[j].Addr)
		}
		return !out[i].Current && out[j].Current
	})
	return out, nil
}

// publishedNextHops lists the valid entries of both published next-hop
// tables, by address.
func (p *pinnedProgram) publishedNextHops() ([]NextHop, error) {
	var out []NextHop
	for _, t := range []struct {
		name string
		v6   bool
	}{{"nexthop_table", false}, {"nexthop6_table", true}} {
		m, err := p.mapNamed(t.name, true)
		if err != nil {
			return nil, err
		}
		if m == nil {
			// Not reachable: nexthop6_table is the IPv6 path's, a tail
			// call whose array the kernel empties once no process or pin
			// holds it (a daemon of a build that did not pin it, dead:
			// pinTailCalls). The IPv4 table is still read.
			continue
		}
		words, err := readWords(m)
		if err != nil {
			return nil, err
		}
		table, err := newNextHopTable(words, t.v6)
		if err != nil {
			unix.Munmap(words.mem)
			return nil, err
		}
		out = append(out, table.entries()...)
		unix.Munmap(words.mem)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr.Less(out[j].Addr) })
	return out, nil
}
