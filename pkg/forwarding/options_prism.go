package forwarding

import (
	"fmt"
	"time"
)

// PrismOptions are the prism strategy's own settings (issue 12), json
// "prism" in the instance configuration; nil means the defaults.
type PrismOptions struct {
	// MCTEntries bounds the migrated-connection table: the size of each
	// mux's MCT map and the most entries the controller keeps. A move whose
	// signatures would not fit is not made (the bucket stays where it is).
	MCTEntries uint32 `json:"mct_entries,omitempty" yaml:"mct_entries,omitempty"`
	// MaxRounds bounds Algorithm 1's rounds per pool update (the paper's
	// T_limit expressed in rounds).
	MaxRounds int `json:"max_rounds,omitempty" yaml:"max_rounds,omitempty"`
	// Lifetime is the expected connection lifetime T of Algorithm 2 (a
	// signature's expected stay in the MCT is T minus its age).
	Lifetime time.Duration `json:"lifetime,omitempty" yaml:"lifetime,omitempty"`
	// Settle is how long the controller waits after announcing the bins
	// about to move (muxes then remember their SYNs) before it reads the
	// old owners' connections: longer than a mux takes to apply a
	// generation.
	Settle time.Duration `json:"settle,omitempty" yaml:"settle,omitempty"`
}

// Prism defaults and bounds.
const (
	DefaultMCTEntries  = 1 << 16
	MaxMCTEntries      = 1 << 22
	DefaultPrismRounds = 8
	DefaultLifetime    = 60 * time.Second
	DefaultSettle      = 500 * time.Millisecond
)

// PrismSettings is the instance's Prism options with defaults filled in.
func (in *Instance) PrismSettings() PrismOptions {
	var o PrismOptions
	if in.Prism != nil {
		o = *in.Prism
	}
	if o.MCTEntries == 0 {
		o.MCTEntries = DefaultMCTEntries
	}
	if o.MaxRounds == 0 {
		o.MaxRounds = DefaultPrismRounds
	}
	if o.Lifetime == 0 {
		o.Lifetime = DefaultLifetime
	}
	if o.Settle == 0 {
		o.Settle = DefaultSettle
	}
	return o
}

func checkPrism(in *Instance) error {
	o := in.PrismSettings()
	switch {
	case o.MCTEntries > MaxMCTEntries:
		return fmt.Errorf("prism mct_entries %d must be in 1–%d", o.MCTEntries, MaxMCTEntries)
	case o.MaxRounds < 1 || o.MaxRounds > 64:
		return fmt.Errorf("prism max_rounds %d must be in 1–64", o.MaxRounds)
	case o.Lifetime < 0:
		return fmt.Errorf("prism lifetime %v is negative", o.Lifetime)
	case o.Settle < 0 || o.Settle > time.Minute:
		return fmt.Errorf("prism settle %v must be in 0–1m", o.Settle)
	}
	return nil
}
