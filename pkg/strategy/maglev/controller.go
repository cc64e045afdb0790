package maglev

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// EntriesPerBackend is the table size per backend Maglev recommends
// (§3.4, §5.3: M ≫ N, "M > 100·N"): below it the entry shares, and so the
// backends' loads, stray further from the weights. ctl show warns below it.
const EntriesPerBackend = 100

// Controller is the controller's side of Maglev: the Buckets array is the Maglev lookup table (B = M,
// prime), rebuilt from scratch over the live backends and their weights;
// only entries whose owner differs are published, with no history and
// Changed 0 (no daisy chaining: muxes keep established connections in their
// connection tables instead). A down backend is marked down so muxes stop
// sending it the connections they remember; a removed one drains for the
// window (the papers' stateful mux).
type Controller struct{}

func init() { ctlstrategy.Register(Controller{}) }

func (Controller) Name() forwarding.Strategy { return forwarding.StrategyMaglev }

func (Controller) Moves(p *ctlstrategy.Planning) ([]forwarding.BucketChange, error) {
	table, err := assign.MaglevTable(p.Servers, uint32(len(p.Buckets)))
	if err != nil {
		return nil, err
	}
	var moves []forwarding.BucketChange
	for i, owner := range table {
		if p.Buckets[i] != (forwarding.Bucket{Current: owner}) {
			moves = append(moves, forwarding.BucketChange{Index: uint32(i), Bucket: forwarding.Bucket{Current: owner}})
		}
	}
	return moves, nil
}

func (Controller) DownState() forwarding.ServerState { return forwarding.Down }
func (Controller) DrainsRemoved() bool               { return true }
func (Controller) Histories() bool                   { return false }

func (Controller) Show(v *ctlstrategy.View, live int) {
	// No ranges, no daisy chaining: what matters is M/N.
	v.Unit = "ENTRIES"
	cfg := v.Instance
	defer func() {
		v.Details = append(v.Details, fmt.Sprintf("strategy maglev: lookup table of M = %d entries (prime), %.0f entries per live backend (recommended ≥ %d), %d unowned entries",
			cfg.Buckets, v.EntriesPerBackend, EntriesPerBackend, v.Unowned))
	}()
	if live == 0 {
		return
	}
	v.EntriesPerBackend = float64(cfg.Buckets) / float64(live)
	if v.EntriesPerBackend < EntriesPerBackend {
		v.Warnings = append(v.Warnings, fmt.Sprintf("Maglev table of %d entries for %d backends: %.0f entries per backend, Maglev needs at least %d for near-even shares; create a larger instance (B prime ≥ %d)",
			cfg.Buckets, live, v.EntriesPerBackend, EntriesPerBackend, EntriesPerBackend*live))
	}
}
