package cheetah

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/dataplane/bpfspec"
	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
)

// muxLoader: the Beamer bucket table and histories for clients without
// timestamps, plus the instance's record in cheetah_insts (keys, policy,
// pick list), rewritten whole whenever the table changes
// (bpf/strategy/cheetah.h).
type muxLoader struct{}

func init() { muxspi.Register(forwarding.StrategyCheetah, muxLoader{}) }

func (muxLoader) Prepare(muxspi.MuxHost) error { return nil }
func (muxLoader) Histories() bool              { return true }

func (muxLoader) NewState(forwarding.Instance, *forwarding.Table) (muxspi.InstanceState, error) {
	return &muxState{}, nil
}

func (muxLoader) Counters() []muxspi.CounterSet {
	return []muxspi.CounterSet{{Map: "cheetah_mux_counters", Enum: "cheetah_mux_counter", Prefix: "CHEETAH_MUX_",
		Metric: "beamer_mux_cheetah_packets_total",
		Help:   "Segments of Cheetah VIPs by how the server was found (cookie hits, bad cookies, fallbacks to buckets)."}}
}

// muxState follows the instance's whole table (muxspi.TableWatcher): the
// record is rebuilt after every delta, so the per-delta hooks do nothing.
type muxState struct {
	layout *recordLayout // read from the spec on first use
}

func (*muxState) Install(muxspi.MuxHost, uint32) error { return nil }
func (*muxState) Before(*forwarding.Delta) error       { return nil }
func (*muxState) After(*forwarding.Delta)              {}
func (*muxState) Close()                               {}

// Uninstall forgets the freed slot's record.
func (*muxState) Uninstall(h muxspi.MuxHost, slot uint32) {
	if insts, err := h.Map("cheetah_insts"); err == nil {
		insts.Delete(slot)
	}
}

var policyCode = map[forwarding.CheetahPolicy]uint8{
	forwarding.CheetahRR: 1, forwarding.CheetahWRR: 2, forwarding.CheetahP2C: 3, forwarding.CheetahHash: 4,
}

// Applied writes the instance's record for table t: after a table is
// built or a delta applied, before the VIP records name it.
func (s *muxState) Applied(h muxspi.MuxHost, slot uint32, cfg forwarding.Instance, t *forwarding.Table) error {
	o := cfg.Cheetah
	if o == nil {
		return fmt.Errorf("cheetah: instance %q without options", cfg.Name)
	}
	if s.layout == nil {
		l, err := layoutOf(h.Spec())
		if err != nil {
			return err
		}
		s.layout = &l
	}
	l := s.layout
	keys := o.Keys
	if st := t.Cheetah; st != nil {
		keys = st.Keys
	}
	rec := make([]byte, l.size)
	le := binary.LittleEndian
	for i, k := range keys.Keys {
		for w, v := range k {
			le.PutUint32(rec[l.keys+i*l.keySize+4*w:], v)
		}
	}
	rec[l.policy] = policyCode[o.Policy]
	picks := cheetahPicks(t, o.Policy == forwarding.CheetahWRR, l.maxPicks)
	le.PutUint16(rec[l.n:], uint16(len(picks)))
	for i, id := range picks {
		le.PutUint16(rec[l.picks+2*i:], id)
	}
	// Loads first: a new record's picks never meet a missing load.
	if o.Policy == forwarding.CheetahP2C && t.Cheetah != nil {
		loads, err := h.Map("cheetah_load")
		if err != nil {
			return err
		}
		for _, id := range picks {
			if err := loads.Put(slot<<16|uint32(id), t.Cheetah.Loads[forwarding.ServerID(id)]); err != nil {
				return fmt.Errorf("installing cheetah load: %w", err)
			}
		}
	}
	insts, err := h.Map("cheetah_insts")
	if err != nil {
		return err
	}
	if err := insts.Put(slot, rec); err != nil {
		return fmt.Errorf("installing cheetah record: %w", err)
	}
	return nil
}

// SetLoad sets a server's load (active connections) for an instance whose
// policy is p2c, given the mux's WithInstance, until the next generation
// brings the published ones (forwarding.CheetahState.Loads); tests and
// benchmarks use it.
func SetLoad(with muxspi.WithInstance, name string, id forwarding.ServerID, load uint32) error {
	return with(name, func(h muxspi.MuxHost, slot, _ uint32, _ muxspi.InstanceState) error {
		loads, err := h.Map("cheetah_load")
		if err != nil {
			return err
		}
		return loads.Put(slot<<16|uint32(id), load)
	})
}

// recordLayout is struct cheetah_mux_inst (bpf/strategy/cheetah.h), read
// from the program's BTF.
type recordLayout struct {
	size, keys, keySize, policy, n, picks int // sizes and offsets in bytes
	maxPicks                              int // CHEETAH_MAX_PICKS
}

func layoutOf(spec *ebpf.CollectionSpec) (recordLayout, error) {
	var l recordLayout
	r := bpfspec.Reader{Spec: spec}
	l.size = r.Size("cheetah_mux_inst")
	l.keys = r.Offset("cheetah_mux_inst", "keys")
	l.keySize = r.Size("cheetah_key")
	l.policy = r.Offset("cheetah_mux_inst", "policy")
	l.n = r.Offset("cheetah_mux_inst", "n")
	l.maxPicks, l.picks = r.Array("cheetah_mux_inst", "picks")
	if r.Err == nil && l.keySize != 16 {
		r.Fail("struct cheetah_key is %d bytes, a key 16", l.keySize)
	}
	return l, r.Err
}

// cheetahPicks is the pick list of a table: the active servers by id, each
// once; for wrr each as often as its share of the buckets (which the
// controller sizes by weight) allows in 1024 entries, interleaved by smooth
// weighted round robin so that no server gets a run of new connections.
func cheetahPicks(t *forwarding.Table, weighted bool, cheetahMaxPicks int) []uint16 {
	var ids []forwarding.ServerID
	for id, s := range t.Servers {
		if s.State == forwarding.Active && id <= forwarding.ServerID(cheetahMaxID) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	if len(ids) > cheetahMaxPicks {
		ids = ids[:cheetahMaxPicks]
	}
	if !weighted {
		out := make([]uint16, len(ids))
		for i, id := range ids {
			out[i] = uint16(id)
		}
		return out
	}
	owned := map[forwarding.ServerID]int{}
	for _, b := range t.Buckets {
		owned[b.Current]++
	}
	total := 0
	for _, id := range ids {
		total += owned[id]
	}
	if total == 0 {
		return nil
	}
	// Entries per server: proportional, at least 1 for a server that owns
	// buckets, at most 1024 in all.
	weight := make([]int, len(ids))
	sum := 0
	for i, id := range ids {
		if owned[id] > 0 {
			weight[i] = max(1, owned[id]*cheetahMaxPicks/total)
			if weight[i]*len(ids) > cheetahMaxPicks {
				weight[i] = max(1, cheetahMaxPicks/len(ids)*owned[id]*len(ids)/total)
			}
		}
		sum += weight[i]
	}
	for sum > cheetahMaxPicks { // rounding up to 1 overshot: trim the largest
		i := slices.Index(weight, slices.Max(weight))
		weight[i]--
		sum--
	}
	cur := make([]int, len(ids))
	out := make([]uint16, 0, sum)
	for range sum {
		best := -1
		for i := range ids {
			cur[i] += weight[i]
			if weight[i] > 0 && (best < 0 || cur[i] > cur[best]) {
				best = i
			}
		}
		cur[best] -= sum
		out = append(out, uint16(ids[best]))
	}
	return out
}

// cheetahMaxID is the largest server id a cookie can carry (pkg/strategy/cheetah/cookie.MaxID).
const cheetahMaxID = 1<<15 - 1
