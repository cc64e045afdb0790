package dataplane

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// counterSet reads a program's decision counters: a per-CPU array of one
// element, an array of u64 indexed by the values of a C enum
// (bpf/include/counters.h). Names come from the enum in the object's BTF,
// so the C program is the single place that defines them. One lookup reads
// every counter of every CPU.
type counterSet struct {
	m     *ebpf.Map
	names []string
}

// newCounterSet names the counters after the enumerators of enumName,
// stripping prefix and lower-casing ("MUX_DROP_TRUNCATED" → "drop_truncated").
// The last enumerator (the *_MAX count) is not a counter.
func newCounterSet(spec *ebpf.CollectionSpec, m *ebpf.Map, enumName, prefix string) (*counterSet, error) {
	names, err := counterNames(spec, enumName, prefix)
	if err != nil {
		return nil, err
	}
	n := len(names)
	if m.MaxEntries() != 1 || m.ValueSize() != uint32(8*n) {
		return nil, fmt.Errorf("counter map of %d entries of %d bytes, enum %s wants 1 of %d", m.MaxEntries(), m.ValueSize(), enumName, 8*n)
	}
	return &counterSet{m: m, names: names}, nil
}

// counterNames are the enumerators of enumName in enum order, prefix
// stripped, lower-cased; the last one (the *_MAX count) is not a counter.
func counterNames(spec *ebpf.CollectionSpec, enumName, prefix string) ([]string, error) {
	var e *btf.Enum
	if err := spec.Types.TypeByName(enumName, &e); err != nil {
		return nil, fmt.Errorf("enum %s: %w", enumName, err)
	}
	n := len(e.Values) - 1
	names := make([]string, n)
	for _, v := range e.Values[:n] {
		if v.Value >= uint64(n) {
			return nil, fmt.Errorf("enum %s: %s = %d is not dense", enumName, v.Name, v.Value)
		}
		names[v.Value] = strings.ToLower(strings.TrimPrefix(v.Name, prefix))
	}
	return names, nil
}

// Read sums every counter over all CPUs. The kernel copies each CPU's
// counters in one go, so counters of one CPU are read together (a packet
// in flight on another CPU may still be counted in one and not yet the
// other).
func (c *counterSet) Read() (map[string]uint64, error) {
	raw, err := c.m.LookupBytes(uint32(0))
	if err != nil {
		return nil, fmt.Errorf("reading counters: %w", err)
	}
	stride := 8 * len(c.names) // a multiple of 8: no per-CPU padding
	if len(raw) == 0 || len(raw)%stride != 0 {
		return nil, fmt.Errorf("reading counters: %d bytes, not whole sets of %d", len(raw), stride)
	}
	out := make(map[string]uint64, len(c.names))
	for cpu := 0; cpu < len(raw); cpu += stride {
		for i, name := range c.names {
			out[name] += binary.NativeEndian.Uint64(raw[cpu+8*i:])
		}
	}
	return out, nil
}

// Names lists the counters in enum order.
func (c *counterSet) Names() []string { return append([]string(nil), c.names...) }
