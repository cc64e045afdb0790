package forwarding

import (
	"fmt"
	"maps"

	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// CheetahState is the Cheetah strategy's part of an instance's forwarding
// state: the cookie keys and the server loads the p2c policy compares. It
// travels in the ring like the bucket table, so a key rotation and every
// load update reach every mux without a restart, in generation order
// (docs/strategy-cheetah.md, "Keys and rotation", "Power of two choices").
type CheetahState struct {
	Keys cookie.Keys
	// Loads are the servers' established connections of the instance's
	// VIPs, as their agents last reported them; a server not listed counts
	// 0. Only p2c reads them.
	Loads map[ServerID]uint32
}

// Clone is a deep copy (nil for nil).
func (s *CheetahState) Clone() *CheetahState {
	if s == nil {
		return nil
	}
	return &CheetahState{Keys: s.Keys, Loads: maps.Clone(s.Loads)}
}

// Equal reports whether s and o hold the same keys and loads (a missing
// load equals 0).
func (s *CheetahState) Equal(o *CheetahState) bool {
	if s == nil || o == nil {
		return s == o
	}
	if s.Keys != o.Keys {
		return false
	}
	for id, l := range s.Loads {
		if o.Loads[id] != l {
			return false
		}
	}
	for id, l := range o.Loads {
		if s.Loads[id] != l {
			return false
		}
	}
	return true
}

// Check rejects keys a mux must not run with: a current key id other than
// 0 or 1, or an all-zero current key (a client could compute cookies), and
// loads of invalid server ids.
func (s *CheetahState) Check() error {
	if s.Keys.Current > 1 {
		return fmt.Errorf("%w: cheetah current key id %d is not 0 or 1", ErrInvalid, s.Keys.Current)
	}
	if s.Keys.Keys[s.Keys.Current] == (cookie.Key{}) {
		return fmt.Errorf("%w: cheetah current key is all zero", ErrInvalid)
	}
	for id := range s.Loads {
		if !id.Valid() {
			return fmt.Errorf("%w: cheetah load of server id %d outside %d–%d", ErrInvalid, id, MinServerID, MaxServerID)
		}
	}
	return nil
}
