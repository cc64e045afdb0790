package prism

import (
	"context"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/prometheus/client_golang/prometheus"
)

// Controller is the controller's side of Prism: ECMP bins plus the
// migrated-connection table (MCT). Bins move by Algorithm 2 (least
// expected MCT load) and, before a bin flips, the signatures of its live
// connections — learnt from its owner's agent, the SCT — are copied into
// the MCT in rounds (Algorithm 1), in the same generation as the flip; a
// final round after the flip catches the SYNs of the last moment
// (migrate.go). A down DIP is marked down and its bins move; if its agent
// still answers (a service refusing new connections, not a dead server)
// its connections are migrated like a graceful removal's, else they are
// dead and its MCT entries are pruned. A removed server stays retired
// while an MCT entry names it. Dead entries are pruned from the servers'
// socket lists, and with KeepAlive from the muxes' keep-alive bits first
// (keepalive.go).
type Controller struct{}

func init() { ctlstrategy.Register(Controller{}) }

// ControllerOptions are Prism's controller options
// (controller.Options.Strategies[forwarding.StrategyPrism]).
type ControllerOptions struct {
	// Signatures asks agents for their Prism signatures (the SCT); nil:
	// HTTP to DIP:agent_port.
	Signatures SignatureLister
	// KeepAlive, if set, prunes MCT entries from the muxes' keep-alive
	// bits, the servers' socket lists as the second opinion; nil: from the
	// servers' socket lists alone.
	KeepAlive *KeepAlive
}

// optionsOf is c's Prism options with their defaults filled in.
func optionsOf(c ctlstrategy.Ctl) ControllerOptions {
	return filled(c.Options())
}

func filled(v any) ControllerOptions {
	var o ControllerOptions
	if p, ok := v.(*ControllerOptions); ok && p != nil {
		o = *p
	}
	if o.Signatures == nil {
		o.Signatures = &agentapi.Client{}
	}
	if o.KeepAlive != nil {
		k := *o.KeepAlive
		k.fill()
		o.KeepAlive = &k
	}
	return o
}

func (Controller) Name() forwarding.Strategy { return forwarding.StrategyPrism }

// NewState is the controller's Prism state: the SCT per instance, the
// migration just flipped, the keep-alive memory (migrate.go).
func (Controller) NewState() any { return newRuntime() }

// NewMetrics registers Prism's controller metrics (metrics.go).
func (Controller) NewMetrics(reg prometheus.Registerer) any { return newMetrics(reg) }

func (Controller) Moves(p *ctlstrategy.Planning) ([]forwarding.BucketChange, error) {
	moves, mct, err := moves(p)
	p.MCT = mct
	return moves, err
}

// Finish runs Algorithm 1's final round after the flip is published.
func (Controller) Finish(ctx context.Context, c ctlstrategy.Ctl, in ctlstrategy.Instance) (*forwarding.Delta, error) {
	return final(ctx, c, in)
}

// RunBackground collects the muxes' keep-alive bits while the controller
// leads, if KeepAlive is configured, and hands each round to the loop.
func (Controller) RunBackground(ctx context.Context, h ctlstrategy.Host) error {
	o := filled(h.Options())
	if o.KeepAlive == nil {
		return nil
	}
	p := &keepAlivePoller{h: h, o: *o.KeepAlive}
	return p.run(ctx)
}

func (Controller) DownState() forwarding.ServerState { return forwarding.Down }
func (Controller) DrainsRemoved() bool               { return false }
func (Controller) Histories() bool                   { return false }

func (Controller) Show(v *ctlstrategy.View, _ int) {
	o := v.Instance.PrismSettings()
	v.Unit = "BINS"
	v.Details = append(v.Details, fmt.Sprintf("strategy prism: %d bins, MCT %d of %d entries (%.4f%% full), %d unowned bins",
		v.Instance.Buckets, v.MCTSize, o.MCTEntries, 100*float64(v.MCTSize)/float64(o.MCTEntries), v.Unowned))
}
