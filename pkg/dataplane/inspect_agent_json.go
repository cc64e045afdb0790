package dataplane

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"

	"github.com/beamer-lb/beamer/pkg/dataplane/agentspi"
	"github.com/cilium/ebpf"
)

// inspectHost is a pinned agent as one strategy's Inspect reads it
// (agentspi.InspectHost): the maps of its pinned state from its own
// directory first, the program's otherwise.
type inspectHost struct {
	p      *pinnedProgram
	spec   *ebpf.CollectionSpec
	dir    string   // the strategy's pinned-state directory, "" for none
	pinned []string // the maps pinned there
	opened []*ebpf.Map
}

func (h *inspectHost) Spec() *ebpf.CollectionSpec { return h.spec }

func (h *inspectHost) Map(name string) (*ebpf.Map, error) {
	if h.dir != "" && slices.Contains(h.pinned, name) {
		m, err := pinnedMap(h.dir, name, h.spec)
		if err != nil {
			return nil, err
		}
		if m != nil {
			h.opened = append(h.opened, m)
			return m, nil
		}
	}
	return h.p.mapNamed(name, true)
}

// inspectStrategy reads one strategy's part of the pinned agent p: its
// counter sets, present in the program, and what its Inspect shows.
func inspectStrategy(p *pinnedProgram, spec *ebpf.CollectionSpec, s agentspi.Strategy) (StrategyInspection, error) {
	var out StrategyInspection
	if c, ok := s.(agentspi.Counted); ok {
		for _, set := range c.Counters() {
			if m, err := p.mapNamed(set.Map, true); err != nil || m == nil {
				if err != nil {
					return out, err
				}
				continue
			}
			cs, err := p.counters(spec, set.Map, set.Enum, set.Prefix)
			if err != nil {
				return out, err
			}
			if out.Counters == nil {
				out.Counters = map[string]Counters{}
			}
			out.Counters[set.Key] = cs
		}
	}
	in, ok := s.(agentspi.Inspected)
	if !ok {
		return out, nil
	}
	h := &inspectHost{p: p, spec: spec}
	if ps, ok := s.(agentspi.PinnedState); ok {
		var sub string
		sub, h.pinned = ps.PinnedState()
		h.dir = filepath.Join(p.dir, sub)
	}
	defer func() {
		for _, m := range h.opened {
			m.Close()
		}
	}()
	var err error
	out.Inspection, err = in.Inspect(h)
	return out, err
}

// MarshalJSON writes the agent's own fields with each strategy's beside
// them: pin_dir, program, vips, the strategies' fields, counters, the
// strategies' counters (each group's keys sorted); empty strategy fields
// and counters are left out.
func (in AgentInspection) MarshalJSON() ([]byte, error) {
	type field struct {
		key string
		v   any
	}
	fields := []field{{"pin_dir", in.PinDir}, {"program", in.Program}, {"vips", in.VIPs}}
	var own, counters []field
	for _, s := range in.Strategies {
		for k, v := range s.Fields {
			own = append(own, field{k, v})
		}
		for k, c := range s.Counters {
			if len(c) > 0 {
				counters = append(counters, field{k, c})
			}
		}
	}
	byKey := func(a, b field) int {
		if a.key < b.key {
			return -1
		}
		if a.key > b.key {
			return 1
		}
		return 0
	}
	slices.SortFunc(own, byKey)
	slices.SortFunc(counters, byKey)
	fields = append(append(append(fields, own...), field{"counters", in.Counters}), counters...)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
