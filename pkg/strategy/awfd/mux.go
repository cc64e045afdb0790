package awfd

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/dataplane/bpfspec"
	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/cilium/ebpf"
)

// muxLoader: the connection table Maglev also uses, and the instance's
// class record in its slot of awfd_records (bpf/strategy/awfd.h). The
// record comes from the store (the mux daemon's follower, daemon.go), not
// from the table, so it is kept in the instance's state and carried over
// when the instance is loaded again.
type muxLoader struct{}

func init() { muxspi.Register(forwarding.StrategyAWFD, muxLoader{}) }

func (muxLoader) Prepare(h muxspi.MuxHost) error { return h.EnsureConnTrack() }
func (muxLoader) Histories() bool                { return false }

func (muxLoader) NewState(forwarding.Instance, *forwarding.Table) (muxspi.InstanceState, error) {
	return &muxState{}, nil
}

func (muxLoader) Counters() []muxspi.CounterSet {
	return []muxspi.CounterSet{{Map: "awfd_counters", Enum: "awfd_counter", Prefix: "AWFD_",
		Metric: "beamer_mux_awfd_packets_total",
		Help:   "Packets of AWFD VIPs by the awfd strategy's decision (by_class: new connection placed by its class record)."}}
}

// muxState is one instance's class record, as loaded.
type muxState struct {
	record  *classes.Record // nil until the store gives one
	records *ebpf.Map       // the mux's awfd_records, once installed
	layout  recordLayout
	slot    uint32
}

// Inherit keeps the record the instance had before it was loaded again:
// the store does not send it again for a new table.
func (s *muxState) Inherit(old muxspi.InstanceState) {
	if o, ok := old.(*muxState); ok {
		s.record = o.record
	}
}

// Install puts the record (if any) in the new slot before the VIP records
// name the slot.
func (s *muxState) Install(h muxspi.MuxHost, slot uint32) error {
	records, err := h.Map("awfd_records")
	if err != nil {
		return err
	}
	if s.layout, err = layoutOf(h.Spec()); err != nil {
		return err
	}
	s.records, s.slot = records, slot
	if s.record == nil {
		return nil
	}
	return s.write(s.record)
}

func (s *muxState) write(r *classes.Record) error {
	b, err := s.layout.pack(r)
	if err != nil {
		return err
	}
	if err := s.records.Put(s.slot, b); err != nil {
		return fmt.Errorf("loading awfd record: %w", err)
	}
	return nil
}

// Uninstall forgets the freed slot's record.
func (s *muxState) Uninstall(h muxspi.MuxHost, slot uint32) {
	if records, err := h.Map("awfd_records"); err == nil {
		records.Delete(slot)
	}
}

func (s *muxState) Before(*forwarding.Delta) error { return nil }
func (s *muxState) After(*forwarding.Delta)        {}
func (s *muxState) Close()                         {}

// ErrOldRecord: a record older (by sequence) than the one loaded.
var ErrOldRecord = errors.New("awfd record refused")

// SetRecord loads r as the named AWFD instance's class record in a mux,
// given the mux's WithInstance; a record older than the loaded one is
// refused (ErrOldRecord) and changes nothing.
func SetRecord(with muxspi.WithInstance, name string, r *classes.Record) error {
	return with(name, func(_ muxspi.MuxHost, _, _ uint32, st muxspi.InstanceState) error {
		s, ok := st.(*muxState)
		if !ok {
			return fmt.Errorf("awfd: instance %q is not an awfd instance", name)
		}
		if s.record != nil && r.Seq < s.record.Seq {
			return fmt.Errorf("%w: sequence %d older than the loaded %d", ErrOldRecord, r.Seq, s.record.Seq)
		}
		if err := s.write(r); err != nil {
			return err
		}
		s.record = r
		return nil
	})
}

// RecordOf is the class record the named instance has loaded (nil: none,
// or not an AWFD instance).
func RecordOf(with muxspi.WithInstance, name string) *classes.Record {
	var r *classes.Record
	with(name, func(_ muxspi.MuxHost, _, _ uint32, st muxspi.InstanceState) error {
		if s, ok := st.(*muxState); ok {
			r = s.record
		}
		return nil
	})
	return r
}

// recordLayout is struct awfd_record (bpf/strategy/awfd_select.h): its
// size, its arrays' byte offsets and lengths, read from the program's BTF.
type recordLayout struct {
	size                         int
	upper, start, count, servers int // offsets
	maxClasses, maxServers       int
}

func layoutOf(spec *ebpf.CollectionSpec) (recordLayout, error) {
	var l recordLayout
	r := bpfspec.Reader{Spec: spec}
	l.size = r.Size("awfd_record")
	l.maxClasses, l.upper = r.Array("awfd_record", "upper")
	_, l.start = r.Array("awfd_record", "start")
	_, l.count = r.Array("awfd_record", "count")
	l.maxServers, l.servers = r.Array("awfd_record", "servers")
	return l, r.Err
}

// pack lays r out as struct awfd_record.
func (l recordLayout) pack(r *classes.Record) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if r.M() > l.maxClasses {
		return nil, fmt.Errorf("awfd record: %d classes, the mux holds %d", r.M(), l.maxClasses)
	}
	b := make([]byte, l.size)
	le := binary.LittleEndian
	le.PutUint64(b[0:], r.Seq)
	le.PutUint32(b[8:], r.Total())
	b[12] = byte(r.M())
	next := 0
	for k, members := range r.Classes {
		if next+len(members) > l.maxServers {
			return nil, fmt.Errorf("awfd record: more than %d servers", l.maxServers)
		}
		le.PutUint32(b[l.upper+4*k:], r.Upper[k])
		le.PutUint16(b[l.start+2*k:], uint16(next))
		le.PutUint16(b[l.count+2*k:], uint16(len(members)))
		for _, id := range members {
			le.PutUint16(b[l.servers+2*next:], uint16(id))
			next++
		}
	}
	return b, nil
}

// PackRecord lays r out as struct awfd_record of the program spec (the
// bytes SetRecord loads); the C selection's vector test packs with it.
func PackRecord(spec *ebpf.CollectionSpec, r *classes.Record) ([]byte, error) {
	l, err := layoutOf(spec)
	if err != nil {
		return nil, err
	}
	return l.pack(r)
}
