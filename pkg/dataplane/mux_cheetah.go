package dataplane

import (
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// cheetahMux: the Beamer bucket table and histories for clients without
// timestamps, plus the instance's record in cheetah_insts (keys, policy,
// pick list), rewritten whole whenever the table changes
// (bpf/strategy/cheetah.h).
type cheetahMux struct{}

func init() { registerMuxStrategy(forwarding.StrategyCheetah, cheetahMux{}) }

func (cheetahMux) prepare(*Mux) error { return nil }
func (cheetahMux) histories() bool    { return true }

// tableWatcher is implemented by strategies with state of their own to
// follow the instance's table: installed runs after a table is built or a
// delta applied, before the VIP records name it; released when the slot is
// freed.
type tableWatcher interface {
	installed(m *Mux, in *muxInstance) error
	released(m *Mux, in *muxInstance)
}

func strategyInstalled(m *Mux, in *muxInstance) error {
	if w, ok := muxStrategyOf(in.cfg).(tableWatcher); ok {
		return w.installed(m, in)
	}
	return nil
}

func strategyReleased(m *Mux, in *muxInstance) {
	if w, ok := muxStrategyOf(in.cfg).(tableWatcher); ok {
		w.released(m, in)
	}
}

var cheetahPolicyCode = map[forwarding.CheetahPolicy]uint8{
	forwarding.CheetahRR: 1, forwarding.CheetahWRR: 2, forwarding.CheetahP2C: 3, forwarding.CheetahHash: 4,
}

// cheetahPicks is the pick list of a table: the active servers by id, each
// once; for wrr each as often as its share of the buckets (which the
// controller sizes by weight) allows in 1024 entries, interleaved by smooth
// weighted round robin so that no server gets a run of new connections.
func cheetahPicks(t *forwarding.Table, weighted bool) []uint16 {
	var ids []forwarding.ServerID
	for id, s := range t.Servers {
		if s.State == forwarding.Active && id <= forwarding.ServerID(cheetahMaxID) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	cheetahMaxPicks := muxLimit().cheetahPicks // CHEETAH_MAX_PICKS
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

func (cheetahMux) installed(m *Mux, in *muxInstance) error {
	o := in.cfg.Cheetah
	if o == nil {
		return fmt.Errorf("dataplane: cheetah instance %q without options", in.cfg.Name)
	}
	// The ring's keys win over the configuration's: the configuration is
	// read once at start, a rotation arrives as a generation.
	keys := o.Keys
	if st := in.table.Cheetah; st != nil {
		keys = st.Keys
	}
	rec := muxCheetahMuxInst{Policy: cheetahPolicyCode[o.Policy]}
	for i, k := range keys.Keys {
		rec.Keys[i].K = k
	}
	picks := cheetahPicks(in.table, o.Policy == forwarding.CheetahWRR)
	rec.N = uint16(len(picks))
	copy(rec.Picks[:], picks)
	// Loads first: a new record's picks never meet a missing load.
	if o.Policy == forwarding.CheetahP2C && in.table.Cheetah != nil {
		for _, id := range picks {
			if err := m.objs.CheetahLoad.Put(in.slot<<16|uint32(id), in.table.Cheetah.Loads[forwarding.ServerID(id)]); err != nil {
				return fmt.Errorf("installing cheetah load: %w", err)
			}
		}
	}
	if err := m.objs.CheetahInsts.Put(in.slot, &rec); err != nil {
		return fmt.Errorf("installing cheetah record: %w", err)
	}
	return nil
}

func (cheetahMux) released(m *Mux, in *muxInstance) { m.objs.CheetahInsts.Delete(in.slot) }

// SetCheetahLoad sets a server's load (active connections) for an instance
// whose policy is p2c, until the next generation brings the published ones
// (forwarding.CheetahState.Loads); tests and benchmarks use it.
func (m *Mux) SetCheetahLoad(name string, id forwarding.ServerID, load uint32) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownInstance, name)
	}
	return m.objs.CheetahLoad.Put(in.slot<<16|uint32(id), load)
}

// CheetahCounters are the Cheetah strategy's counters summed over CPUs.
func (m *Mux) CheetahCounters() (map[string]uint64, error) { return m.cheetah.Read() }

// newState: the cheetah record follows the whole table (tableWatcher), so
// the per-delta state hooks are not needed.
func (cheetahMux) newState(forwarding.Instance, *forwarding.Table) (instanceState, error) {
	return nil, nil
}
