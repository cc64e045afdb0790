package controller

import (
	"context"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// prismStrategy: ECMP bins plus Prism's migrated-connection table (MCT).
// Bins move by Algorithm 2 (least expected MCT load) and, before a bin
// flips, the signatures of its live connections — learnt from its owner's
// agent, the SCT — are copied into the MCT in rounds (Algorithm 1), in the
// same generation as the flip; a final round after the flip catches the
// SYNs of the last moment (prism.go). A down DIP is marked down and its
// bins move; if its agent still answers (a service refusing new
// connections, not a dead server) its connections are migrated like a
// graceful removal's, else they are dead and its MCT entries are pruned. A
// removed server stays retired while an MCT entry names it.
type prismStrategy struct{}

func init() { registerStrategy(prismStrategy{}) }

func (prismStrategy) sweepsMCT() {}

func (prismStrategy) Name() forwarding.Strategy { return forwarding.StrategyPrism }

func (prismStrategy) Moves(p *planning) ([]forwarding.BucketChange, error) {
	moves, mct, err := p.c.prismMoves(p)
	p.mct = mct
	return moves, err
}

func (prismStrategy) Finish(c *Controller, in *instance) (*forwarding.Delta, error) {
	return c.prismFinal(context.Background(), in)
}

func (prismStrategy) DownState() forwarding.ServerState { return forwarding.Down }
func (prismStrategy) DrainsRemoved() bool               { return false }
func (prismStrategy) Histories() bool                   { return false }

func (prismStrategy) Show(v *View, _ int) {
	o := v.Instance.PrismSettings()
	v.Unit = "BINS"
	v.Details = append(v.Details, fmt.Sprintf("strategy prism: %d bins, MCT %d of %d entries (%.4f%% full), %d unowned bins",
		v.Instance.Buckets, v.MCTSize, o.MCTEntries, 100*float64(v.MCTSize)/float64(o.MCTEntries), v.Unowned))
}
