package dataplane

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
)

// Traffic per VIP and per server on the mux (bpf/include/vip_traffic.h):
// per-CPU arrays whose slots the daemon hands out here and names in the VIP
// record (vip_info.stats) and in the server word (bits 48-63), each as
// slot + 1, 0 meaning "not counted".
//
// A slot stays with its VIP (its instance's server id and address) for as
// long as that is published, across resyncs of the instance. A slot given
// back is retired, and handed out again only after an RCU grace period
// (when no packet can still be counting into it through an old record or
// word), zeroed as it is handed out: a VIP removed and another added in its
// slot starts from 0 and never inherits the old counts.

// Sizes fixed by bpf/include/mux_maps.h.
const (
	serverStatShift = 48 // SERVER_STAT: the server word's bits 48-63
)

// statSlots hands out the slots of one per-CPU counter array.
type statSlots struct {
	m    *ebpf.Map
	zero any // a value per CPU, all zero: what a slot is reset to
	graceSlots
}

func newStatSlots(m *ebpf.Map, n int, zero any) *statSlots {
	return &statSlots{m: m, zero: zero, graceSlots: newGraceSlots(n)}
}

// take returns a zeroed slot + 1, or 0 when every slot is in use (the
// VIP or server is then forwarded but not counted apart).
func (s *statSlots) take() (uint16, error) {
	slot, ok, err := s.graceSlots.take()
	if err != nil || !ok {
		return 0, err
	}
	if err := s.m.Put(uint32(slot), s.zero); err != nil {
		s.putBack(slot)
		return 0, fmt.Errorf("dataplane: zeroing traffic counters slot %d: %w", slot, err)
	}
	return slot + 1, nil
}

// give retires a slot + 1 that nothing names any more (0: nothing to do).
func (s *statSlots) give(stat uint16) {
	if stat != 0 {
		s.retire(stat - 1)
	}
}

// serverKey names a counted server: an instance's server id.
type serverKey struct {
	instance string
	id       forwarding.ServerID
}

type serverStat struct {
	stat uint16 // slot + 1
	addr netip.Addr
}

// muxTraffic is the Mux's share of the traffic counters.
type muxTraffic struct {
	vipSlots    *statSlots
	serverSlots *statSlots
	vips        map[netip.Addr]uint16 // VIP → slot + 1
	servers     map[serverKey]serverStat
}

func newMuxTraffic(objs *muxObjects) (*muxTraffic, error) {
	cpus, err := ebpf.PossibleCPU()
	if err != nil {
		return nil, err
	}
	return &muxTraffic{
		vipSlots:    newStatSlots(objs.MuxVipTraffic, int(objs.MuxVipTraffic.MaxEntries()), make([]muxVipTraffic, cpus)),
		serverSlots: newStatSlots(objs.MuxServerTraffic, int(objs.MuxServerTraffic.MaxEntries()), make([]muxServerTraffic, cpus)),
		vips:        map[netip.Addr]uint16{},
		servers:     map[serverKey]serverStat{},
	}, nil
}

// vipStat is v's slot + 1, taken when v has none yet.
func (t *muxTraffic) vipStat(v netip.Addr) (uint16, error) {
	if s, ok := t.vips[v]; ok {
		return s, nil
	}
	s, err := t.vipSlots.take()
	if err != nil || s == 0 {
		return 0, err
	}
	t.vips[v] = s
	return s, nil
}

// forgetVIP gives v's slot back: its record is no longer named.
func (t *muxTraffic) forgetVIP(v netip.Addr) {
	t.vipSlots.give(t.vips[v])
	delete(t.vips, v)
}

// serverStat is the slot + 1 of an instance's server id at addr: its
// current one, or a new one when the id is new or changed address (the
// old one given back after the new is taken, so no grace period taken
// for the new can free the old while its word is still stored).
func (t *muxTraffic) serverStat(instance string, id forwarding.ServerID, addr netip.Addr) (uint16, error) {
	k := serverKey{instance, id}
	old, ok := t.servers[k]
	if ok && old.addr == addr {
		return old.stat, nil
	}
	s, err := t.serverSlots.take()
	if err != nil {
		return 0, err
	}
	if ok {
		t.serverSlots.give(old.stat)
	}
	if s == 0 {
		delete(t.servers, k)
		return 0, nil
	}
	t.servers[k] = serverStat{stat: s, addr: addr}
	return s, nil
}

// forgetServer gives a removed server's slot back, once its word is 0.
func (t *muxTraffic) forgetServer(instance string, id forwarding.ServerID) {
	k := serverKey{instance, id}
	if s, ok := t.servers[k]; ok {
		t.serverSlots.give(s.stat)
		delete(t.servers, k)
	}
}

// keepServers gives back the slots of instance's servers that servers (its
// table now loaded; nil: none, the instance is gone) does not hold.
func (t *muxTraffic) keepServers(instance string, servers map[forwarding.ServerID]forwarding.Server) {
	for k, s := range t.servers {
		if k.instance != instance {
			continue
		}
		if sv, ok := servers[k.id]; !ok || sv.Addr != s.addr {
			t.serverSlots.give(s.stat)
			delete(t.servers, k)
		}
	}
}

// serverWordCounted is s's server word naming its counters' slot.
func (in *muxInstance) serverWordCounted(id forwarding.ServerID, s forwarding.Server) (uint64, error) {
	w := serverWord(s)
	if in.traffic == nil {
		return w, nil
	}
	stat, err := in.traffic.serverStat(in.cfg.Name, id, s.Addr)
	return w | uint64(stat)<<serverStatShift, err
}

// MuxVIPTraffic is what the mux did with one VIP's packets since the VIP
// was published on it (or the daemon started): forwarded packets, their
// bytes (the clients' IP packets: IPv4 total length, IPv6 payload + 40),
// the new flows among them (TCP SYNs without ACK; UDP and QUIC count none),
// and drops by reason (a decision counter's name without "drop_"; packets
// answered with an ICMP too-big are "icmp_too_big"). Packets answered or
// passed to the mux's own stack (ICMP echo) are not counted here.
type MuxVIPTraffic struct {
	Instance string     `json:"instance"`
	VIP      netip.Addr `json:"vip"`
	MuxVIPCounts
}

// MuxVIPCounts is what the mux forwarded and dropped for one VIP: packets,
// bytes (the client's IP packet), new flows (TCP SYN without ACK) and
// drops by reason (the drop_* decisions without "drop_").
type MuxVIPCounts struct {
	Packets  uint64            `json:"packets"`
	Bytes    uint64            `json:"bytes"`
	NewFlows uint64            `json:"new_flows"`
	Drops    map[string]uint64 `json:"drops,omitempty"`
}

// MuxServerTraffic is what the mux forwarded to one server of an instance
// (over all the instance's VIPs) since the server was added with this
// address (or the daemon started).
type MuxServerTraffic struct {
	Instance string              `json:"instance"`
	ID       forwarding.ServerID `json:"id"`
	Addr     netip.Addr          `json:"addr"`
	Packets  uint64              `json:"packets"`
	Bytes    uint64              `json:"bytes"`
}

// Traffic reads the per-VIP and per-server counters of every loaded
// instance, summed over CPUs, sorted by instance then VIP (server id).
func (m *Mux) Traffic() ([]MuxVIPTraffic, []MuxServerTraffic, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	names := m.counters.Names()
	var vips []MuxVIPTraffic
	var servers []MuxServerTraffic
	for name, in := range m.instances {
		for _, v := range in.cfg.VIPs {
			stat := m.traffic.vips[v]
			if stat == 0 {
				continue
			}
			var per []muxVipTraffic
			if err := m.objs.MuxVipTraffic.Lookup(uint32(stat-1), &per); err != nil {
				return nil, nil, fmt.Errorf("reading the traffic of VIP %v: %w", v, err)
			}
			t := MuxVIPTraffic{Instance: name, VIP: v, MuxVIPCounts: sumVIPTraffic(per, names)}
			vips = append(vips, t)
		}
		for id, s := range in.table.Servers {
			st, ok := m.traffic.servers[serverKey{name, id}]
			if !ok || st.addr != s.Addr {
				continue
			}
			var per []muxServerTraffic
			if err := m.objs.MuxServerTraffic.Lookup(uint32(st.stat-1), &per); err != nil {
				return nil, nil, fmt.Errorf("reading the traffic of server %d of %q: %w", id, name, err)
			}
			sum := sumServerTraffic(per)
			t := MuxServerTraffic{Instance: name, ID: id, Addr: s.Addr, Packets: sum.Packets, Bytes: sum.Bytes}
			servers = append(servers, t)
		}
	}
	sort.Slice(vips, func(i, j int) bool {
		if vips[i].Instance != vips[j].Instance {
			return vips[i].Instance < vips[j].Instance
		}
		return vips[i].VIP.Less(vips[j].VIP)
	})
	sort.Slice(servers, func(i, j int) bool {
		if servers[i].Instance != servers[j].Instance {
			return servers[i].Instance < servers[j].Instance
		}
		return servers[i].ID < servers[j].ID
	})
	return vips, servers, nil
}

// Unowned counts, per instance, the buckets whose kernel word names no
// server of the instance's table (no owner, or an id the table lacks):
// what the data path drops as no_owner or unknown_server. It reads the
// words the program reads, as State does, without State's per-owner
// tally (buckets mostly come in runs of one owner: one table lookup a run).
func (m *Mux) Unowned() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.instances))
	for name, in := range m.instances {
		n := 0
		last, lastOwned := forwarding.ServerID(0), false
		for i := range uint32(len(in.table.Buckets)) {
			id := forwarding.ServerID(uint16(in.buckets.get(i)))
			if id != last || i == 0 {
				_, lastOwned = in.table.Servers[id]
				last = id
			}
			if !lastOwned {
				n++
			}
		}
		out[name] = n
	}
	return out
}

// sumVIPTraffic sums a VIP's per-CPU traffic element (the daemon's, or one
// `mux inspect` found in the kernel); names are the mux's counter names,
// a drop reason's index being its counter's.
func sumVIPTraffic(per []muxVipTraffic, names []string) MuxVIPCounts {
	var t MuxVIPCounts
	for _, c := range per {
		t.Packets += c.Packets
		t.Bytes += c.Bytes
		t.NewFlows += c.NewFlows
		for i, n := range c.Drops {
			if n == 0 || i >= len(names) {
				continue
			}
			if t.Drops == nil {
				t.Drops = map[string]uint64{}
			}
			t.Drops[strings.TrimPrefix(names[i], "drop_")] += n
		}
	}
	return t
}

// sumServerTraffic sums a server's per-CPU traffic element.
func sumServerTraffic(per []muxServerTraffic) muxServerTraffic {
	var sum muxServerTraffic
	for _, c := range per {
		sum.Packets += c.Packets
		sum.Bytes += c.Bytes
	}
	return sum
}
