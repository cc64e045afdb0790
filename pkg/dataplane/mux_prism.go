package dataplane

import (
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// prismMux: Prism's migrated-connection table, one BPF hash map per
// instance in the instance's slot of mct_tables (bpf/strategy/prism.h).
type prismMux struct{}

func init() { registerMuxStrategy(forwarding.StrategyPrism, prismMux{}) }

func (prismMux) prepare(*Mux) error { return nil }
func (prismMux) histories() bool    { return false }

// mctValue is struct mct_value: u16 server, u8 alive, 5 bytes pad.
func mctValue(id forwarding.ServerID) uint64 { return uint64(id) }

func (prismMux) newState(cfg forwarding.Instance, t *forwarding.Table) (instanceState, error) {
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

type mctState struct {
	m    *ebpf.Map
	size uint32
}

func (s *mctState) install(m *Mux, slot uint32) error {
	if err := m.objs.MctTables.Put(slot, s.m); err != nil {
		return fmt.Errorf("installing the MCT: %w", err)
	}
	return nil
}

func (s *mctState) uninstall(m *Mux, slot uint32) { m.objs.MctTables.Delete(slot) }

// before writes the delta's new MCT entries: they must be on this mux
// before any bucket word of the delta (the move they protect) is.
func (s *mctState) before(d *forwarding.Delta) error {
	for _, c := range d.MCT {
		if !c.Remove {
			if err := s.m.Put(c.Sig, mctValue(c.Server)); err != nil {
				return fmt.Errorf("MCT entry %#x: %w", c.Sig, err)
			}
		}
	}
	return nil
}

// after removes the entries the delta drops (dead connections), once the
// generation is published.
func (s *mctState) after(d *forwarding.Delta) {
	for _, c := range d.MCT {
		if c.Remove {
			s.m.Delete(c.Sig)
		}
	}
}

func (s *mctState) close() { s.m.Close() }

// MCTStats reads the named Prism instance's MCT: its entries, how many had
// their keep-alive bit set, and its capacity. With sweep, set bits are
// cleared (the paper's periodic check) and idle lists the signatures whose
// bit was clear: no packet since the previous sweep.
func (m *Mux) MCTStats(name string, sweep bool) (entries, alive int, size uint32, idle []uint64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	in, ok := m.instances[name]
	if !ok {
		return 0, 0, 0, nil, fmt.Errorf("%w %q", ErrUnknownInstance, name)
	}
	s, ok := in.state.(*mctState)
	if !ok {
		return 0, 0, 0, nil, errors.New("dataplane: not a prism instance")
	}
	var sig, v uint64
	set := map[uint64]uint64{} // alive signature -> its value without the bit
	it := s.m.Iterate()
	for it.Next(&sig, &v) {
		entries++
		if v>>16&0xff != 0 {
			alive++
			set[sig] = v &^ (0xff << 16)
		} else {
			idle = append(idle, sig)
		}
	}
	if err := it.Err(); err != nil {
		return 0, 0, 0, nil, err
	}
	if sweep {
		for sig, cleared := range set {
			// Clears the bit; a packet racing with it sets it again.
			if err := s.m.Update(sig, cleared, ebpf.UpdateExist); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
				return 0, 0, 0, nil, err
			}
		}
	}
	return entries, alive, s.size, idle, nil
}
