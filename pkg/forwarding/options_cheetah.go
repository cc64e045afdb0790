package forwarding

import (
	"fmt"
	"time"

	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// CheetahPolicy is how a Cheetah mux picks the server of a new connection.
type CheetahPolicy string

// The policies (docs/strategy-cheetah.md).
const (
	// CheetahRR is round robin over the active servers (a position per
	// mux CPU).
	CheetahRR CheetahPolicy = "rr"
	// CheetahWRR is round robin weighted by the servers' shares of the
	// bucket table, which the controller sizes by weight.
	CheetahWRR CheetahPolicy = "wrr"
	// CheetahP2C is power of two choices over published server loads.
	CheetahP2C CheetahPolicy = "p2c"
	// CheetahHash is the Beamer bucket's owner (stateless hashing for the
	// first packet, the cookie after).
	CheetahHash CheetahPolicy = "hash"
)

// CheetahOptions are the cheetah strategy's own settings, json "cheetah" in
// the instance configuration.
type CheetahOptions struct {
	Policy CheetahPolicy `json:"policy" yaml:"policy"`
	// Keys obfuscate the cookie; muxes decode with the key id the cookie
	// carries, servers encode new connections with Keys.Current. Rotation:
	// put a new key in the other slot, then make it current; the old one
	// stays for the connections that carry it. Never zero in a valid
	// instance (the current key is set); read APIs zero it after taking
	// its fingerprints (controller.Show), and omitzero leaves it out then.
	Keys cookie.Keys `json:"keys,omitzero" yaml:"keys"`
	// SwitchAt, when set, is when the controller makes the other key slot
	// current: a rotation (`ctl cheetah rotate-key`) wrote a new key there
	// and gives every mux time to load it before any server uses it.
	SwitchAt time.Time `json:"switch_at,omitzero" yaml:"switch_at,omitempty"`
	// Switched is when the current key became current (zero: at creation).
	Switched time.Time `json:"switched,omitzero" yaml:"switched,omitempty"`
}

func checkCheetah(in *Instance) error {
	o := in.Cheetah
	if o == nil {
		return fmt.Errorf("strategy cheetah needs its options (policy and keys)")
	}
	switch o.Policy {
	case CheetahRR, CheetahWRR, CheetahP2C, CheetahHash:
	default:
		return fmt.Errorf("cheetah policy %q is not rr, wrr, p2c or hash", o.Policy)
	}
	if o.Keys.Current > 1 {
		return fmt.Errorf("cheetah current key id %d is not 0 or 1", o.Keys.Current)
	}
	if o.Keys.Keys[o.Keys.Current] == (cookie.Key{}) {
		return fmt.Errorf("cheetah current key is all zero: a client could compute cookies")
	}
	return nil
}

// Cheetah: the Beamer bucket table serves clients without timestamps, so
// the instance's general rules apply, plus the policy and keys.
// Its servers take the keys the controller pushes.
func init() {
	RegisterStrategy(StrategySpec{Name: StrategyCheetah, Check: checkCheetah, CheckServer: checkCheetahServer, ServerKeys: true,
		HasOptions: func(in *Instance) bool { return in.Cheetah != nil }, OptionsRequired: true})
}

// checkCheetahServer: a cookie carries 15 bits of server id.
func checkCheetahServer(id ServerID) error {
	if id > cookie.MaxID {
		return fmt.Errorf("server id %d does not fit a Cheetah cookie (at most %d)", id, cookie.MaxID)
	}
	return nil
}
