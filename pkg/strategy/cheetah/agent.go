package cheetah

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/beamer-lb/beamer/pkg/dataplane/agentspi"
	"github.com/beamer-lb/beamer/pkg/dataplane/bpfspec"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// agentSide is Cheetah's side of the server agent's data plane
// (bpf/strategy/cheetah_agent.h): the keys per VIP and the key id per
// socket, pinned apart from the VIP layout so they survive any restart;
// the count of VIPs the ingress reads; the cookie writer on egress; its
// counters.
type agentSide struct{}

func init() { agentspi.Register(forwarding.StrategyCheetah, agentSide{}) }

// The pinned state's directory under the agent's pin directory, and the
// egress link's: both names are on disk (bpffs), kept as they were.
const (
	stateDir  = "cheetah-state"
	egressDir = "cheetah-egress"
)

// PinnedState: Cheetah's keys per VIP and key id per socket, keyed by VIP
// address and by socket, not by VIP slot: a restarted agent writes
// cookies from its first packet, with the key id each connection started
// with, also after a restart that changed the VIPs or bucket counts.
func (agentSide) PinnedState() (string, []string) {
	return stateDir, []string{"cheetah_vips", "cheetah_kid"}
}

// Loaded: keys adopted from a predecessor are used from the first packet.
func (agentSide) Loaded(h agentspi.AgentHost) error { return countVIPs(h) }

func (agentSide) Counters() []agentspi.CounterSet {
	return []agentspi.CounterSet{{Map: "cheetah_agent_counters", Enum: "cheetah_agent_counter", Prefix: "CHEETAH_",
		Metric: "beamer_agent_cheetah_packets_total",
		Help:   "Segments of Cheetah VIPs by what the agent did to their timestamps.",
		Key:    "cheetah_counters"}}
}

// AgentVIP is a VIP of a Cheetah instance this server serves: its slot in
// the instance's server table and the instance's keys. The egress program
// writes the cookie naming ID into the TSval of every segment the server
// sends from the VIP, and the agent shows the stack a usable TSecr instead
// of the client's echo (bpf/strategy/cheetah_agent.h).
type AgentVIP struct {
	VIP  netip.Addr
	ID   uint16
	Keys cookie.Keys
}

// SetVIP starts (or updates: a key rotation) the cookie for a VIP in the
// loaded agent h. The record is replaced whole, so a segment sees either
// the old or the new keys, never a mix.
func SetVIP(h agentspi.AgentHost, v AgentVIP) error {
	if !v.VIP.Is4() {
		return fmt.Errorf("cheetah VIP %v is not IPv4", v.VIP)
	}
	if v.ID == 0 || v.ID > cookie.MaxID {
		return fmt.Errorf("cheetah VIP %v: server slot %d must be in 1–%d", v.VIP, v.ID, cookie.MaxID)
	}
	if v.Keys.Current > 1 {
		return fmt.Errorf("cheetah VIP %v: key id %d must be 0 or 1", v.VIP, v.Keys.Current)
	}
	l, err := agentLayoutOf(h.Spec())
	if err != nil {
		return err
	}
	m, err := h.Map("cheetah_vips")
	if err != nil {
		return err
	}
	if err := m.Put(v.VIP.As4(), l.encode(v)); err != nil {
		return err
	}
	return countVIPs(h)
}

// VIPs lists the VIPs the agent writes cookies for: those set, and after
// a hitless restart those the previous agent had (the map is pinned).
func VIPs(h agentspi.AgentHost) ([]AgentVIP, error) {
	m, err := h.Map("cheetah_vips")
	if err != nil {
		return nil, err
	}
	return readVIPs(h.Spec(), m)
}

// readVIPs decodes every record of a cheetah_vips map.
func readVIPs(spec *ebpf.CollectionSpec, m *ebpf.Map) ([]AgentVIP, error) {
	l, err := agentLayoutOf(spec)
	if err != nil {
		return nil, err
	}
	var out []AgentVIP
	var k [4]byte
	var rec []byte
	it := m.Iterate()
	for it.Next(&k, &rec) {
		out = append(out, l.decode(netip.AddrFrom4(k), rec))
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("reading cheetah_vips: %w", err)
	}
	return out, nil
}

// DeleteVIP stops writing cookies for a VIP.
func DeleteVIP(h agentspi.AgentHost, vip netip.Addr) error {
	m, err := h.Map("cheetah_vips")
	if err != nil {
		return err
	}
	if err := m.Delete(vip.As4()); err != nil {
		return err
	}
	return countVIPs(h)
}

// countVIPs tells the ingress how many Cheetah VIPs there are (it skips
// its map lookup when there are none).
func countVIPs(h agentspi.AgentHost) error {
	m, err := h.Map("cheetah_vips")
	if err != nil {
		return err
	}
	n := uint32(0)
	var k [4]byte
	var v []byte
	it := m.Iterate()
	for it.Next(&k, &v) {
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	inUse, err := h.Variable("cheetah_vips_in_use")
	if err != nil {
		return err
	}
	return inUse.Set(n)
}

// Egress is the tc egress program, the cookie writer (for attaching or
// test runs).
func Egress(h agentspi.AgentHost) (*ebpf.Program, error) { return h.ProgramNamed("cheetah_egress") }

// AttachEgress attaches the cookie writer to the egress of iface, the
// interface the server's replies leave by (tcx). With a pin directory the
// link is pinned in its cheetah-egress subdirectory, or a link pinned
// there by an earlier agent gets this program swapped in, so replies never
// leave without their cookie across a hitless restart (the key ids pinned
// on sockets start afresh: see the doc).
func AttachEgress(h agentspi.AgentHost, iface string) (link.Link, error) {
	p, err := Egress(h)
	if err != nil {
		return nil, err
	}
	l, err := h.AttachTC(p, iface, true, egressDir)
	if err != nil {
		return nil, fmt.Errorf("attaching cheetah egress to %s: %w", iface, err)
	}
	return l, nil
}

// DropEgress detaches a cookie writer an earlier agent left pinned (an
// agent that serves no Cheetah VIP any more). Without pinning, or without
// such a writer, it does nothing.
func DropEgress(h agentspi.AgentHost) error { return h.DetachPinned(egressDir) }

// AgentCounters returns the cookie writer's and restorer's counters summed
// over CPUs.
func AgentCounters(h agentspi.AgentHost) (map[string]uint64, error) {
	return h.CountersIn("cheetah_agent_counters")
}

// agentLayout is struct cheetah_vip (bpf/strategy/cheetah_agent.h), read
// from the program's BTF.
type agentLayout struct {
	size, keys, keySize, id, kid int // sizes and offsets in bytes
}

func agentLayoutOf(spec *ebpf.CollectionSpec) (agentLayout, error) {
	var l agentLayout
	r := bpfspec.Reader{Spec: spec}
	l.size = r.Size("cheetah_vip")
	l.keySize = r.Size("cheetah_key")
	var n int
	n, l.keys = r.Array("cheetah_vip", "keys")
	l.id = r.Offset("cheetah_vip", "id")
	l.kid = r.Offset("cheetah_vip", "kid")
	if r.Err == nil && (l.keySize != 16 || n != 2 || l.keys+2*l.keySize > l.id || l.id+2 > l.kid || l.kid >= l.size) {
		r.Fail("struct cheetah_vip %+v: want two 16-byte keys, then the id and the key id", l)
	}
	if r.Err == nil && r.ValueSize("cheetah_vips") != l.size {
		r.Fail("map cheetah_vips holds %d bytes, struct cheetah_vip is %d", r.ValueSize("cheetah_vips"), l.size)
	}
	return l, r.Err
}

func (l agentLayout) encode(v AgentVIP) []byte {
	rec := make([]byte, l.size)
	le := binary.LittleEndian
	for i, k := range v.Keys.Keys {
		for w, x := range k {
			le.PutUint32(rec[l.keys+i*l.keySize+4*w:], x)
		}
	}
	le.PutUint16(rec[l.id:], v.ID)
	rec[l.kid] = v.Keys.Current
	return rec
}

func (l agentLayout) decode(vip netip.Addr, rec []byte) AgentVIP {
	le := binary.LittleEndian
	v := AgentVIP{VIP: vip, ID: le.Uint16(rec[l.id:]), Keys: cookie.Keys{Current: rec[l.kid]}}
	for i := range v.Keys.Keys {
		for w := range v.Keys.Keys[i] {
			v.Keys.Keys[i][w] = le.Uint32(rec[l.keys+i*l.keySize+4*w:])
		}
	}
	return v
}
