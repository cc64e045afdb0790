package dataplane

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
)

// counterSet reads a per-CPU array of decision counters whose indexes are the
// values of a C enum. Names come from the enum in the object's BTF, so the C
// program is the single place that defines them.
type counterSet struct {
	m     *ebpf.Map
	names []string
}

// newCounterSet names the counters after the enumerators of enumName,
// stripping prefix and lower-casing ("MUX_DROP_TRUNCATED" → "drop_truncated").
// The last enumerator (the *_MAX count) is not a counter.
func newCounterSet(spec *ebpf.CollectionSpec, m *ebpf.Map, enumName, prefix string) (*counterSet, error) {
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
	if m.MaxEntries() != uint32(n) {
		return nil, fmt.Errorf("counter map has %d entries, enum %s %d", m.MaxEntries(), enumName, n)
	}
	return &counterSet{m: m, names: names}, nil
}

// Read sums every counter over all CPUs.
func (c *counterSet) Read() (map[string]uint64, error) {
	out := make(map[string]uint64, len(c.names))
	var perCPU []uint64
	for i, name := range c.names {
		if err := c.m.Lookup(uint32(i), &perCPU); err != nil {
			return nil, fmt.Errorf("reading counter %s: %w", name, err)
		}
		var sum uint64
		for _, v := range perCPU {
			sum += v
		}
		out[name] = sum
	}
	return out, nil
}

// Names lists the counters in enum order.
func (c *counterSet) Names() []string { return append([]string(nil), c.names...) }
