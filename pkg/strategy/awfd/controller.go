package awfd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
	"github.com/beamer-lb/beamer/pkg/strategy/maglev"
	"github.com/prometheus/client_golang/prometheus"
)

// Controller is the controller's side of AWFD (Spotlight, issue 14): the
// ring carries a Maglev table — the equal-share fallback muxes use before
// the first class record and while no server reports capacity — and the
// server table, whose states the muxes check before following a record.
// Servers are treated as Maglev's: a down server is marked down (muxes
// stop sending it the connections they remember), a removed one drains
// for the window. What is AWFD's own — capacity polls, classes, the record
// beside the ring — is the poller (poller.go), its background work.
type Controller struct{ maglev.Controller }

func init() { ctlstrategy.Register(Controller{}) }

func (Controller) Name() forwarding.Strategy { return forwarding.StrategyAWFD }

// RunBackground polls the capacity of the servers of every AWFD instance
// while the controller leads.
func (Controller) RunBackground(ctx context.Context, h ctlstrategy.Host) error {
	return newPoller(h, pollOptions{}).Run(ctx)
}

// NewMetrics registers the poller's metrics (metrics.go).
func (Controller) NewMetrics(reg prometheus.Registerer) any { return newMetrics(reg) }

// ReadShow reads what `ctl show` adds for the strategy from the store.
func (Controller) ReadShow(ctx context.Context, st store.Store, k ring.Keys, v *ctlstrategy.View, now time.Time) error {
	rec, err := classes.Read(ctx, st, k)
	if err != nil {
		v.Warnings = append(v.Warnings, fmt.Sprintf("AWFD class record unreadable (muxes keep their last good one): %v", err))
		return nil
	}
	v.AWFD = rec
	if rec != nil {
		v.AWFDAge = now.Sub(time.UnixMilli(rec.AtMillis)).Round(time.Millisecond)
	}
	return nil
}

func (s Controller) Show(v *ctlstrategy.View, live int) {
	s.Controller.Show(v, live)
	o := v.Instance.AWFDConfig()
	v.Details = append(v.Details, fmt.Sprintf("strategy awfd: m = %d classes, capacity polled every %v, a silent agent's last value kept %v then halved every %v",
		o.Classes, o.Poll, o.Hold, o.Poll))
	r := v.AWFD
	if r == nil {
		v.Details = append(v.Details, "no class record yet: new connections follow the Maglev table (equal shares)")
		return
	}
	// A record a few heartbeats old means the poller is not running (no
	// leader, or it cannot write): muxes still use it, but it is stale.
	if stale := 3 * 5 * time.Second; v.AWFDAge > stale {
		v.Warnings = append(v.Warnings, fmt.Sprintf("AWFD class record is %v old: is the controller polling? muxes keep dispatching by it", v.AWFDAge))
	}
	if r.Empty() {
		v.Details = append(v.Details, fmt.Sprintf("class record seq %d (%v old): no server has capacity; new connections follow the Maglev table", r.Seq, v.AWFDAge))
	} else {
		v.Details = append(v.Details, fmt.Sprintf("class record seq %d (%v old), hash range 0–%d:", r.Seq, v.AWFDAge, r.Total()-1))
	}
	lo := uint32(0)
	for k := len(r.Classes) - 1; k >= 0; k-- {
		if len(r.Classes[k]) == 0 {
			continue
		}
		lo = 0
		if k > 0 {
			lo = r.Upper[k-1]
		}
		v.Details = append(v.Details, fmt.Sprintf("  class %d: range %d–%d (%.1f%% of new connections): %s", k+1, lo, r.Upper[k]-1,
			100*float64(r.Upper[k]-lo)/float64(r.Total()), ids(r.Classes[k])))
	}
	if len(r.Idle) > 0 {
		v.Details = append(v.Details, "  class 0 (no new connections): "+ids(r.Idle))
	}
}

func ids(list []forwarding.ServerID) string {
	s := make([]string, len(list))
	for i, id := range list {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, " ")
}
