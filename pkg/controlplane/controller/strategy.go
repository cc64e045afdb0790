package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// Strategy is what the controller does differently per forwarding strategy.
// A strategy of its own package (pkg/strategy/NAME) implements
// ctlstrategy.Strategy and is seen here through spiStrategy; Prism and
// Cheetah, not moved yet, are types in files of this package
// (strategy_NAME.go), registered by name. The rest of the controller asks
// the instance's strategy instead of switching on its name.
type Strategy interface {
	Name() forwarding.Strategy
	// Moves decides the bucket changes of the next generation from the
	// published buckets and the live servers (with their weights).
	Moves(p *planning) ([]forwarding.BucketChange, error)
	// DownState is the server-table state of a DIP failing its health
	// checks while it is in the pool.
	DownState() forwarding.ServerState
	// DrainsRemoved: a removed server stays retired for the chain window
	// after its removal (muxes may still send it connections they remember).
	DrainsRemoved() bool
	// Histories: buckets keep previous owners, so agents are polled for the
	// connections they hold (holds.go) and bucket ranges can be
	// defragmented (defrag.go).
	Histories() bool
	// Show adds the strategy's part of `ctl show`; live is the number of
	// DIPs with a positive effective weight.
	Show(v *View, live int)
}

// planning is the input of one generation's bucket decisions.
type planning struct {
	c       *Controller
	in      *instance
	buckets []forwarding.Bucket // the published table's
	servers []assign.Server     // live servers with their assignment weights
	down    map[forwarding.ServerID]bool
	now     uint32
	// mct is what the strategy changes in Prism's migrated-connection
	// table in the same generation (Moves fills it).
	mct []forwarding.MCTChange
}

// finisher is a strategy with work after its generation is published
// (Prism: Algorithm 1's final round); a non-nil delta is published next.
type finisher interface {
	Finish(c *Controller, in *instance) (*forwarding.Delta, error)
}

// gater is a strategy that may hold a live server back from new
// connections: planned as down (no buckets, marked DownState in the table).
type gater interface {
	held(c *Controller, in *instance, t *forwarding.Table, id forwarding.ServerID) bool
}

// slotHolder is a strategy that keeps a removed server in the table
// (retired) past its window while it still has connections (Cheetah: a
// cookie names the slot, not a bucket).
type slotHolder interface {
	holdsSlot(c *Controller, in *instance, id forwarding.ServerID) bool
}

// extraState is a strategy with state of its own in the table (Cheetah's
// keys and loads): it adds it to the delta d taking t to the next
// generation when it changed.
type extraState interface {
	extraState(c *Controller, in *instance, t *forwarding.Table, d *forwarding.Delta)
}

// Capabilities of a strategy's own background work (in its own file),
// which asks them of each instance it lists instead of its name:
//
// cookieKeeper: its instances hold cookie keys the controller switches and
// pushes to the agents (Cheetah, cheetah.go).
type cookieKeeper interface{ keepsCookieKeys() }

// mctSweeper: the controller collects the muxes' keep-alive bits of its
// migrated-connection table (Prism, prism_keepalive.go).
type mctSweeper interface{ sweepsMCT() }

// strategyHas tells whether cfg's strategy has capability C.
func strategyHas[C any](cfg *forwarding.Instance) bool {
	s, err := strategyOf(cfg)
	if err != nil {
		return false
	}
	_, ok := s.(C)
	return ok
}

var strategies = map[forwarding.Strategy]Strategy{}

func registerStrategy(s Strategy) {
	if _, dup := strategyNamed(s.Name()); dup {
		panic(fmt.Sprintf("controller: strategy %q registered twice", s.Name()))
	}
	strategies[s.Name()] = s
}

// strategyOf is the strategy of a configuration. Configurations are
// validated before they reach the controller (forwarding.Instance.Validate
// accepts only registered strategies), and every strategy registered there
// has a controller side in this package; the fallback covers a build that
// forgot one, loudly in the logs of whoever reads the error.
func strategyOf(cfg *forwarding.Instance) (Strategy, error) {
	s, ok := strategyNamed(cfg.Strategy)
	if !ok {
		return nil, fmt.Errorf("%w %q: strategy %q has no controller in this build", forwarding.ErrConfig, cfg.Name, cfg.Strategy)
	}
	return s, nil
}

// strategyNamed is the strategy registered here or, for a strategy of its
// own package (pkg/strategy/NAME), in ctlstrategy.
func strategyNamed(name forwarding.Strategy) (Strategy, bool) {
	if s, ok := strategies[name]; ok {
		return s, true
	}
	if s, ok := ctlstrategy.Lookup(name); ok {
		return spiStrategy{s}, true
	}
	return nil, false
}

// spiStrategy is a strategy of its own package seen through this
// package's interface, which the strategies still written here share.
type spiStrategy struct{ s ctlstrategy.Strategy }

func (a spiStrategy) Name() forwarding.Strategy         { return a.s.Name() }
func (a spiStrategy) DownState() forwarding.ServerState { return a.s.DownState() }
func (a spiStrategy) DrainsRemoved() bool               { return a.s.DrainsRemoved() }
func (a spiStrategy) Histories() bool                   { return a.s.Histories() }
func (a spiStrategy) Show(v *View, live int)            { a.s.Show(&v.View, live) }

// readShow: a strategy of its own package reads its part of `ctl show`
// from the store if it is a ctlstrategy.ShowReader (show.go's showReader).
func (a spiStrategy) readShow(ctx context.Context, st store.Store, k ring.Keys, v *View, now time.Time) error {
	if r, ok := a.s.(ctlstrategy.ShowReader); ok {
		return r.ReadShow(ctx, st, k, &v.View, now)
	}
	return nil
}

func (a spiStrategy) Moves(p *planning) ([]forwarding.BucketChange, error) {
	sp := &ctlstrategy.Planning{Config: p.in.config, Buckets: p.buckets, Servers: p.servers, Down: p.down, Now: p.now,
		Histories: func(moves []forwarding.BucketChange) []forwarding.BucketChange {
			return p.c.histories(p.in, p.down, p.now).Plan(p.buckets, moves)
		}}
	moves, err := a.s.Moves(sp)
	p.mct = sp.MCT
	return moves, err
}

// CheckInstance validates a configuration for creation. Every rule on one
// instance, the strategy's included (a Maglev table size must be prime), is
// forwarding.Instance.Validate's, so that ctl, requests, static files and
// muxes reading the store refuse the same things with the same words.
func CheckInstance(in *forwarding.Instance) error {
	if err := in.Validate(); err != nil {
		return err
	}
	if _, err := strategyOf(in); err != nil {
		return err
	}
	if err := in.Health.Check(); err != nil {
		return fmt.Errorf("%w %q: %v", forwarding.ErrConfig, in.Name, err)
	}
	// Checked at creation only, not by Validate: muxes, which never chain,
	// keep forwarding an instance stored before the rule existed.
	if err := forwarding.CheckChainWindow(in.ChainWindow); err != nil {
		return fmt.Errorf("%w %q: %v", forwarding.ErrConfig, in.Name, err)
	}
	return nil
}

// hasHistories tells whether the instance's buckets keep previous owners.
func hasHistories(cfg *forwarding.Instance) bool {
	s, err := strategyOf(cfg)
	return err == nil && s.Histories()
}

// baseStrategy is the strategy another one builds on (Cheetah on Beamer,
// AWFD on Maglev), looked up when asked: the base registers from its own
// package (pkg/strategy/NAME), whose init may run after this package's.
type baseStrategy struct{ name forwarding.Strategy }

func (b baseStrategy) base() Strategy {
	s, ok := strategyNamed(b.name)
	if !ok {
		// A build mistake, like a strategy registered twice: the binary
		// lacks pkg/strategy/all (or the base's own package).
		panic(fmt.Sprintf("controller: strategy %q is not in this build", b.name))
	}
	return s
}

func (b baseStrategy) Moves(p *planning) ([]forwarding.BucketChange, error) { return b.base().Moves(p) }
func (b baseStrategy) DownState() forwarding.ServerState                    { return b.base().DownState() }
func (b baseStrategy) DrainsRemoved() bool                                  { return b.base().DrainsRemoved() }
func (b baseStrategy) Histories() bool                                      { return b.base().Histories() }
func (b baseStrategy) Show(v *View, live int)                               { b.base().Show(v, live) }
