package ctlstrategy

import (
	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Strategy is what the controller does differently per forwarding strategy.
type Strategy interface {
	Name() forwarding.Strategy
	// Moves decides the bucket changes of the next generation from the
	// published buckets and the live servers (with their weights).
	Moves(p *Planning) ([]forwarding.BucketChange, error)
	// DownState is the server-table state of a DIP failing its health
	// checks while it is in the pool.
	DownState() forwarding.ServerState
	// DrainsRemoved: a removed server stays retired for the chain window
	// after its removal (muxes may still send it connections they remember).
	DrainsRemoved() bool
	// Histories: buckets keep previous owners, so agents are polled for the
	// connections they hold and bucket ranges can be defragmented.
	Histories() bool
	// Show adds the strategy's part of `ctl show`; live is the number of
	// DIPs with a positive effective weight.
	Show(v *View, live int)
}

// Planning is the input of one generation's bucket decisions.
type Planning struct {
	Config  *forwarding.Instance
	Buckets []forwarding.Bucket // the published table's
	Servers []assign.Server     // live servers with their assignment weights
	Down    map[forwarding.ServerID]bool
	Now     uint32
	// MCT is what the strategy changes in Prism's migrated-connection
	// table in the same generation (Moves fills it).
	MCT []forwarding.MCTChange
	// Histories turns assign's moves into the bucket changes of the
	// generation under the controller's history rules (down DIPs last,
	// holds kept, the K limit): the instance's own rules at this moment.
	Histories func(moves []forwarding.BucketChange) []forwarding.BucketChange
	// Ctl and In are the controller and the instance, for strategies that
	// ask the servers or publish while they plan (Prism).
	Ctl Ctl
	In  Instance
}

// registry holds each strategy's controller side.
var registry = forwarding.NewRegistry[Strategy]("ctlstrategy")

// Register adds a strategy; a strategy package calls it from init(). A
// name registered twice is a build mistake and panics at start.
func Register(s Strategy) { registry.Register(s.Name(), s) }

// Lookup is the registered strategy of name.
func Lookup(name forwarding.Strategy) (Strategy, bool) { return registry.Lookup(name) }
