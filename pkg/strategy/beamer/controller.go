package beamer

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Controller is the controller's side of Beamer: stable hashing with daisy chaining. Buckets move by the
// paper's greedy rebalance, youngest buckets last, buckets with a full
// history not at all unless their owner leaves; each move names in
// History[0] the owner the bucket moved from, and the history rules
// (the controller's history.go, Planning.Histories) turn that into the bucket's history. A down DIP stays active
// in the server table (no bucket is chained to it anyway), and a removed
// server is kept exactly while some history names it.
type Controller struct{}

func init() { ctlstrategy.Register(Controller{}) }

func (Controller) Name() forwarding.Strategy { return forwarding.StrategyBeamer }

func (Controller) Moves(p *ctlstrategy.Planning) ([]forwarding.BucketChange, error) {
	// A bucket whose history already names K owners stays with an owner
	// that stays: moving it would forget the oldest (assign.RebalanceLimited).
	moves := assign.RebalanceLimited(p.Buckets, p.Servers, p.Now, p.Config.ChainLen())
	// Histories: built from assign's moves and aged, in one place.
	return p.Histories(moves), nil
}

func (Controller) DownState() forwarding.ServerState { return forwarding.Active }
func (Controller) DrainsRemoved() bool               { return false }
func (Controller) Histories() bool                   { return true }

func (Controller) Show(v *ctlstrategy.View, _ int) {
	v.Details = append(v.Details, fmt.Sprintf("strategy beamer: %d buckets, fragmentation %.2f rules/DIP, %d unowned buckets",
		v.Instance.Buckets, v.Fragmentation, v.Unowned))
}
