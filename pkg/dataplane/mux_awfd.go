package dataplane

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
)

// awfdMux: the instance's Maglev table is the equal-share fallback, the
// connection table (shared with Maglev instances) keeps PCC, and the class
// record (bpf/strategy/awfd.h awfd_records, keyed by table slot) places new
// connections. Records come from the store outside the ring (muxd
// awfd.go); the last one loaded is kept across table reloads, which move an
// instance to a new slot.
type awfdMux struct{}

func init() { registerMuxStrategy(forwarding.StrategyAWFD, awfdMux{}) }

func (awfdMux) prepare(m *Mux) error { return m.ensureConnTrack() }
func (awfdMux) histories() bool      { return false }

// newState: the record is not built from the table; it arrives on its own
// (SetAWFDRecord) and follows the instance to new slots (awfdMoved).
func (awfdMux) newState(forwarding.Instance, *forwarding.Table) (instanceState, error) {
	return nil, nil
}

// SetAWFDRecord loads an AWFD instance's class record. Records with a
// sequence below the loaded one are refused (a delayed write) — the
// caller counts them.
func (m *Mux) SetAWFDRecord(name string, r *classes.Record) error {
	b, err := packAWFD(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	in := m.instances[name]
	if in == nil {
		return fmt.Errorf("dataplane: instance %q is not loaded", name)
	}
	if in.cfg.Strategy != forwarding.StrategyAWFD {
		return fmt.Errorf("dataplane: instance %q is %s, not awfd", name, in.cfg.Strategy)
	}
	if old := m.awfd[name]; old != nil && r.Seq < old.Seq {
		return fmt.Errorf("%w: sequence %d older than the loaded %d", ErrAWFDOld, r.Seq, old.Seq)
	}
	if err := m.objs.AwfdRecords.Put(in.slot, b); err != nil {
		return fmt.Errorf("loading awfd record: %w", err)
	}
	m.awfd[name] = r
	return nil
}

// ErrAWFDOld: a record older than the one running.
var ErrAWFDOld = fmt.Errorf("awfd record refused")

// AWFDRecord is the record an instance runs (nil: none yet).
func (m *Mux) AWFDRecord(name string) *classes.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.awfd[name]
}

// awfdMoved puts an instance's record under its new slot before the VIP
// records name the slot (SetInstance), so a reload never drops to the
// fallback; called with m.mu held.
func (m *Mux) awfdMoved(name string, slot uint32) error {
	r := m.awfd[name]
	if r == nil {
		return nil
	}
	b, err := packAWFD(r)
	if err != nil {
		return err
	}
	return m.objs.AwfdRecords.Put(slot, b)
}

// awfdReleased forgets a freed slot's record (m.mu held).
func (m *Mux) awfdReleased(slot uint32) { m.objs.AwfdRecords.Delete(slot) }

// AWFDCounters are the awfd strategy's decision counters (by_class,
// no_record, no_class, not_active, ct_hit, ct_stale, ct_flood), summed
// over CPUs.
func (m *Mux) AWFDCounters() (map[string]uint64, error) { return m.awfdCounters.Read() }
