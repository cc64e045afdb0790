package controller

import (
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// HoldFunc reports whether server id still holds established connections
// of bucket in the instance, so that its entry in the bucket's history must
// outlive the chaining window (issue 10.2: chaining as long as connections
// live). The controller consults it only for entries whose window is past
// its half; it must answer from what it already knows (it runs inside a
// reconcile) and must itself bound how long it holds (a maximum hold), since
// every true answer keeps the entry and re-stamps the bucket's change time
// (forwarding.HistoryRules).
type HoldFunc func(instance string, id forwarding.ServerID, bucket uint32) bool

// histories is the history maintenance of instance in at time now: down
// DIPs go last in every history, Options.Holds keeps entries.
func (c *Controller) histories(in *instance, down map[forwarding.ServerID]bool, now uint32) *forwarding.HistoryRules {
	h := &forwarding.HistoryRules{K: in.config.ChainLen(), Window: uint32(in.config.ChainWindow.Seconds()), Now: now,
		Down: func(id forwarding.ServerID) bool { return down[id] },
		Dead: func(id forwarding.ServerID) bool { d := in.dips[id]; return down[id] && d != nil && d.Unreachable }}
	if hold, name := c.opts.Holds, in.config.Name; hold != nil {
		h.Held = func(id forwarding.ServerID, bucket uint32) bool { return hold(name, id, bucket) }
	}
	c.limitHistories(in, h)
	return h
}
