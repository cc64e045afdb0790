package ctlstrategy

import (
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// View is the part of an instance's `ctl show` state a strategy reads and
// writes (Strategy.Show); controller.View embeds it, so its fields are the
// view's own in Go and in JSON.
type View struct {
	Instance      forwarding.Instance `json:"instance"`
	Fragmentation float64             `json:"fragmentation"`
	Unowned       int                 `json:"unowned_buckets"`
	// EntriesPerBackend (maglev): table entries per backend with a positive
	// effective weight; Maglev wants at least maglev.EntriesPerBackend.
	EntriesPerBackend float64 `json:"entries_per_backend,omitempty"`
	// MCTSize (prism): entries in the migrated-connection table.
	MCTSize int `json:"mct_size,omitempty"`
	// CheetahLoads (cheetah, p2c): the servers' loads the muxes run with.
	CheetahLoads map[forwarding.ServerID]uint32 `json:"cheetah_loads,omitempty"`
	// CheetahKeys (cheetah): each key slot's id and fingerprint, which
	// one is current; the keys themselves are never shown.
	CheetahKeys []cookie.KeyView `json:"cheetah_keys,omitempty"`
	// Unit is what the strategy calls a bucket (BUCKETS, ENTRIES, ...),
	// Histories whether its buckets name previous owners (the CHAINED
	// column), Details the strategy's own lines of `ctl show`
	// (Strategy.Show).
	Unit      string   `json:"unit"`
	Histories bool     `json:"histories"`
	Details   []string `json:"details,omitempty"`
	// AWFD (awfd): the class record the muxes dispatch by and its age.
	AWFD    *classes.Record `json:"awfd,omitempty"`
	AWFDAge time.Duration   `json:"awfd_age,omitempty"`
	// Warnings an operator should act on.
	Warnings []string `json:"warnings,omitempty"`
}
