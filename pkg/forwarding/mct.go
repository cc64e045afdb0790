package forwarding

import (
	"fmt"
	"maps"
)

// Prism's migrated-connection table (MCT) as it travels in the ring: a
// signature (Signature) mapped to the server that owns the connections
// having it, for connections whose bucket moved since their SYN. Muxes look
// it up before the bucket (bpf/strategy/prism.h). It is part of the table
// so that it travels with the generations: a delta's MCT changes are
// applied by a mux before the delta's bucket changes and before the VIP
// record naming the generation (pkg/strategy/prism/mux.go), and a mux
// applies generations in order, so a bucket that moves in generation g is
// never visible on any mux before the MCT entries published in g or before
// (docs/strategy-prism.md, "Ordering").

// MCTChange sets (or, with Remove, deletes) one MCT entry.
type MCTChange struct {
	Sig    uint64
	Server ServerID
	Remove bool
}

// checkMCT checks d's MCT changes against t as d leaves it: a set entry
// names a server of the table that is not removed; a removed entry exists.
func (t *Table) checkMCT(d *Delta, lookup func(ServerID) (Server, bool)) error {
	for _, c := range d.MCT {
		if c.Remove {
			if _, ok := t.MCT[c.Sig]; !ok && !setEarlier(d.MCT, c.Sig) {
				return fmt.Errorf("%w: MCT entry %#x removed but absent", ErrInvalid, c.Sig)
			}
			continue
		}
		if _, ok := lookup(c.Server); !ok {
			return fmt.Errorf("%w: MCT entry %#x names server %d, not in the server-id table", ErrInvalid, c.Sig, c.Server)
		}
	}
	return nil
}

func setEarlier(cs []MCTChange, sig uint64) bool {
	for _, c := range cs {
		if c.Sig == sig && !c.Remove {
			return true
		}
	}
	return false
}

// mctNames lists the servers the MCT names as d leaves it.
func (t *Table) mctNames(d *Delta) map[ServerID]bool {
	after := maps.Clone(t.MCT)
	if after == nil {
		after = map[uint64]ServerID{}
	}
	for _, c := range d.MCT {
		if c.Remove {
			delete(after, c.Sig)
		} else {
			after[c.Sig] = c.Server
		}
	}
	names := map[ServerID]bool{}
	for _, id := range after {
		names[id] = true
	}
	return names
}

func (t *Table) applyMCT(d *Delta) {
	if len(d.MCT) > 0 && t.MCT == nil {
		t.MCT = map[uint64]ServerID{}
	}
	for _, c := range d.MCT {
		if c.Remove {
			delete(t.MCT, c.Sig)
		} else {
			t.MCT[c.Sig] = c.Server
		}
	}
}

// validateMCT: every entry names a server of the table.
func (t *Table) validateMCT() error {
	for sig, id := range t.MCT {
		if _, ok := t.Servers[id]; !ok {
			return fmt.Errorf("%w: MCT entry %#x names server %d, not in the server-id table", ErrInvalid, sig, id)
		}
	}
	return nil
}
