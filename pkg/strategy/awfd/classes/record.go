package classes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Record bounds. MaxServers is what one mux record holds (the BPF value's
// server array, bpf/strategy/awfd.h AWFD_MAX_SERVERS); an instance with
// more active servers than that cannot use AWFD. MaxRecordBytes bounds the
// encoded record a mux reads from the store: 1024 ids of at most 5 digits
// and a comma, plus ranges and field names, fit in well under it.
const (
	MaxServers     = 1024
	MaxRecordBytes = 16 << 10
)

// ErrRecord wraps every reason a record is refused.
var ErrRecord = errors.New("awfd record")

// Record is the class record of one instance: what the controller learned
// at one poll round, as the muxes dispatch new connections by it.
//
// Classes[k] are the servers of weight k+1, sorted; the weight-0 servers
// (full, unreachable for too long, or reporting nothing) get no new
// connection and are listed in Idle for operators only. Upper[k] is the
// exclusive upper end of class k's hash range, Σ_{j≤k} (j+1)·|Classes[j]|:
// the ranges are carried (not only derived) so that ctl show and a mux read
// the same numbers, and a record whose ranges do not match its lists is
// refused.
type Record struct {
	// Seq orders records: strictly increasing for an instance, across
	// controller restarts and leader changes (the controller starts above
	// the stored record's Seq). A mux ignores a record whose Seq is below
	// the one it runs (a delayed or replayed write).
	Seq uint64 `json:"seq"`
	// AtMillis is when the controller computed the record (Unix ms), for
	// ctl show and the muxes' staleness metric. It is never used to refuse
	// a record: a stale record is still valid.
	AtMillis int64                   `json:"at_ms"`
	Classes  [][]forwarding.ServerID `json:"classes"`
	Upper    []uint32                `json:"upper"`
	Idle     []forwarding.ServerID   `json:"idle,omitempty"`
}

// M is the number of classes (the instance's m).
func (r *Record) M() int { return len(r.Classes) }

// Total is Σ_i w_i, the size of the stage-I hash range; 0 when no server
// has a positive weight.
func (r *Record) Total() uint32 {
	if len(r.Upper) == 0 {
		return 0
	}
	return r.Upper[len(r.Upper)-1]
}

// Empty says that no server has a positive weight: muxes then dispatch by
// the instance's table (equal shares), as before the first record.
func (r *Record) Empty() bool { return r.Total() == 0 }

// Weight is the weight of id in r (0 when idle or absent).
func (r *Record) Weight(id forwarding.ServerID) int {
	for k, c := range r.Classes {
		if slices.Contains(c, id) {
			return k + 1
		}
	}
	return 0
}

// Build makes the record of m classes from servers and their weights
// (Weights), in the order the caller gives.
func Build(seq uint64, atMillis int64, m int, ids []forwarding.ServerID, weights []int) (*Record, error) {
	if len(ids) != len(weights) {
		return nil, fmt.Errorf("%w: %d servers, %d weights", ErrRecord, len(ids), len(weights))
	}
	r := &Record{Seq: seq, AtMillis: atMillis, Classes: make([][]forwarding.ServerID, m), Upper: make([]uint32, m)}
	for i, id := range ids {
		w := weights[i]
		switch {
		case w < 0 || w > m:
			return nil, fmt.Errorf("%w: weight %d of server %d outside 0–%d", ErrRecord, w, id, m)
		case w == 0:
			r.Idle = append(r.Idle, id)
		default:
			r.Classes[w-1] = append(r.Classes[w-1], id)
		}
	}
	var up uint32
	for k := range r.Classes {
		slices.Sort(r.Classes[k])
		if r.Classes[k] == nil {
			r.Classes[k] = []forwarding.ServerID{}
		}
		up += uint32(k+1) * uint32(len(r.Classes[k]))
		r.Upper[k] = up
	}
	slices.Sort(r.Idle)
	return r, r.Validate()
}

// Validate checks everything a mux relies on: m in bounds, every id valid
// and listed once, at most MaxServers listed, lists sorted, and
// the ranges exactly the cumulative weights of the lists.
func (r *Record) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrRecord, fmt.Sprintf(format, a...))
	}
	m := len(r.Classes)
	if m < MinClasses || m > MaxClasses {
		return bad("%d classes, want %d–%d", m, MinClasses, MaxClasses)
	}
	if len(r.Upper) != m {
		return bad("%d ranges for %d classes", len(r.Upper), m)
	}
	if r.Seq == 0 {
		return bad("sequence 0")
	}
	seen := map[forwarding.ServerID]bool{}
	check := func(list []forwarding.ServerID, what string) error {
		for i, id := range list {
			if id < forwarding.MinServerID {
				return bad("%s: server id %d is not a valid id (≥ %d)", what, id, forwarding.MinServerID)
			}
			if seen[id] {
				return bad("%s: server %d listed twice", what, id)
			}
			if i > 0 && list[i-1] >= id {
				return bad("%s: servers not in increasing order", what)
			}
			seen[id] = true
		}
		return nil
	}
	var up uint64
	listed := 0
	for k, c := range r.Classes {
		if err := check(c, fmt.Sprintf("class %d", k+1)); err != nil {
			return err
		}
		listed += len(c)
		if listed > MaxServers {
			return bad("more than %d servers listed", MaxServers)
		}
		up += uint64(k+1) * uint64(len(c))
		if uint64(r.Upper[k]) != up {
			return bad("range of class %d ends at %d, its lists say %d", k+1, r.Upper[k], up)
		}
	}
	if listed+len(r.Idle) > MaxServers {
		return bad("%d servers listed, at most %d", listed+len(r.Idle), MaxServers)
	}
	return check(r.Idle, "idle")
}

// Encode is the record as stored (JSON).
func (r *Record) Encode() ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(b) > MaxRecordBytes {
		return nil, fmt.Errorf("%w: %d bytes encoded, at most %d", ErrRecord, len(b), MaxRecordBytes)
	}
	return b, nil
}

// Decode reads and validates a stored record. Anything a hostile or broken
// writer could put there — oversized, unknown fields, trailing data, bad
// ids, ranges that lie — is an error, never a panic.
func Decode(b []byte) (*Record, error) {
	if len(b) > MaxRecordBytes {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrRecord, len(b), MaxRecordBytes)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var r Record
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRecord, err)
	}
	if d.More() {
		return nil, fmt.Errorf("%w: trailing data after the record", ErrRecord)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}
