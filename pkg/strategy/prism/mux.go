package prism

import (
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// muxLoader: Prism's migrated-connection table, one BPF hash map per
// instance in the instance's slot of mct_tables (bpf/strategy/prism.h).
type muxLoader struct{}

func init() { muxspi.Register(forwarding.StrategyPrism, muxLoader{}) }

func (muxLoader) Prepare(muxspi.MuxHost) error { return nil }
func (muxLoader) Histories() bool              { return false }

// mctValue is struct mct_value: u16 server, u8 alive, 5 bytes pad.
func mctValue(id forwarding.ServerID) uint64 { return uint64(id) }

func (muxLoader) NewState(cfg forwarding.Instance, t *forwarding.Table) (muxspi.InstanceState, error) {
	size := cfg.PrismSettings().MCTEntries
	if uint32(len(t.MCT)) > size {
		return nil, fmt.Errorf("dataplane: instance %q: %d MCT entries, the MCT holds %d", cfg.Name, len(t.MCT), size)
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: 8, MaxEntries: size,
		Flags: unix.BPF_F_NO_PREALLOC})
	if err != nil {
		return nil, fmt.Errorf("creating an MCT of %d entries: %w", size, err)
	}
	s := &mctState{m: m, size: size}
	for sig, id := range t.MCT {
		if err := m.Put(sig, mctValue(id)); err != nil {
			m.Close()
			return nil, fmt.Errorf("filling the MCT: %w", err)
		}
	}
	return s, nil
}

// mctState is one instance's MCT. The map sits in mct_tables[slot] only
// while it holds entries: an empty slot makes the program skip the
// signature and the MCT lookup (the common case: no migrated connection
// alive), so a miss then costs about what Beamer's bucket read costs.
type mctState struct {
	m         *ebpf.Map
	size      uint32
	tables    *ebpf.Map // the mux's mct_tables, once installed
	slot      uint32
	installed bool
}

func (s *mctState) Install(h muxspi.MuxHost, slot uint32) error {
	tables, err := h.Map("mct_tables")
	if err != nil {
		return err
	}
	s.tables, s.slot = tables, slot
	return s.show()
}

// show puts the map in its slot if it has entries (and is not there yet).
func (s *mctState) show() error {
	if s.installed || s.tables == nil {
		return nil
	}
	var k uint64
	if err := s.m.NextKey(nil, &k); errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading the MCT: %w", err)
	}
	if err := s.tables.Put(s.slot, s.m); err != nil {
		return fmt.Errorf("installing the MCT: %w", err)
	}
	s.installed = true
	return nil
}

func (s *mctState) Uninstall(h muxspi.MuxHost, slot uint32) {
	if tables, err := h.Map("mct_tables"); err == nil {
		tables.Delete(slot)
	}
	s.installed = false
}

// Before writes the delta's new MCT entries, and shows the map if it was
// empty: the entries must be where packets look before any bucket word of
// the delta (the move they protect) is.
func (s *mctState) Before(d *forwarding.Delta) error {
	for _, c := range d.MCT {
		if !c.Remove {
			if err := s.m.Put(c.Sig, mctValue(c.Server)); err != nil {
				return fmt.Errorf("MCT entry %#x: %w", c.Sig, err)
			}
		}
	}
	return s.show()
}

// After removes the entries the delta drops (dead connections), once the
// generation is published; an MCT left empty leaves its slot.
func (s *mctState) After(d *forwarding.Delta) {
	removed := false
	for _, c := range d.MCT {
		if c.Remove {
			s.m.Delete(c.Sig)
			removed = true
		}
	}
	if !removed || !s.installed {
		return
	}
	var k uint64
	if err := s.m.NextKey(nil, &k); errors.Is(err, ebpf.ErrKeyNotExist) {
		s.tables.Delete(s.slot)
		s.installed = false
	}
}

func (s *mctState) Close() { s.m.Close() }

// MCTBits is what one read of an instance's MCT found.
type MCTBits struct {
	Generation uint32   // the generation applied when it was read
	Entries    int      // entries in the map
	Size       uint32   // the map's capacity
	Hit        []uint64 // signatures whose keep-alive bit was set: a packet went through this mux
	Idle       []uint64 // signatures whose bit was clear
}

// MCTStats reads the named Prism instance's MCT and its keep-alive bits
// through the loaded mux's WithInstance. With sweep, the set bits are
// cleared (the paper's periodic check), so the next sweep's Hit lists the
// entries a packet hit in between.
func MCTStats(with muxspi.WithInstance, name string, sweep bool) (MCTBits, error) {
	var out MCTBits
	err := with(name, func(_ muxspi.MuxHost, _, generation uint32, st muxspi.InstanceState) error {
		s, ok := st.(*mctState)
		if !ok {
			return fmt.Errorf("prism: instance %q is not a prism instance", name)
		}
		var err error
		out, err = s.stats(generation, sweep)
		return err
	})
	return out, err
}

// stats reads the map (the mux's lock held: no generation changes it).
func (s *mctState) stats(generation uint32, sweep bool) (MCTBits, error) {
	out := MCTBits{Size: s.size, Generation: generation}
	var sig, v uint64
	cleared := map[uint64]uint64{} // hit signature -> its value without the bit
	it := s.m.Iterate()
	for it.Next(&sig, &v) {
		out.Entries++
		if v>>16&0xff != 0 {
			out.Hit = append(out.Hit, sig)
			cleared[sig] = v &^ (0xff << 16)
		} else {
			out.Idle = append(out.Idle, sig)
		}
	}
	if err := it.Err(); err != nil {
		return MCTBits{}, err
	}
	if sweep {
		// The mux's lock keeps the generations out (the entry's server cannot
		// change under us); a packet racing with the write sets the bit
		// again, or its hit is lost for this one period — which is why
		// the controller needs several idle periods before it suspects
		// an entry.
		for sig, v := range cleared {
			if err := s.m.Update(sig, v, ebpf.UpdateExist); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return MCTBits{}, err
			}
		}
	}
	return out, nil
}
