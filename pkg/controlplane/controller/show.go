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
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// DIPView is one DIP as `beamer ctl show` prints it.
type DIPView struct {
	DIP
	Effective   uint32  `json:"effective_weight"`
	Buckets     int     `json:"buckets"`
	LoadShare   float64 `json:"load_share"`   // buckets / B
	WeightShare float64 `json:"weight_share"` // effective weight / total
	Chained     int     `json:"chained"`      // buckets naming it as previous owner within the window
	// Health is up, down, suppressed (down and flapping) or pending (not
	// yet probed successfully); PenaltyNow the flap penalty decayed to now
	// with the default half-life (5 min).
	Health     string  `json:"health"`
	PenaltyNow float64 `json:"penalty_now,omitempty"`
}

// View is the state of an instance: the strategy's part (ctlstrategy.View:
// the configuration, fragmentation, the strategy's own lines, warnings) and
// the controller's.
type View struct {
	ctlstrategy.View
	Generation uint32         `json:"generation"`
	Load       ring.LoadStats `json:"load"`
	DIPs       []DIPView      `json:"dips"`
	// Retired are server ids kept in the ring only for daisy chaining.
	Retired []forwarding.ServerID `json:"retired"`
	// FailOpen: every server is down; buckets stay with their last owners.
	FailOpen bool `json:"fail_open,omitempty"`
	// HistoryEvictions: servers pushed out of bucket histories by the K
	// limit while they held connections there (history_limit.go).
	HistoryEvictions *HistoryEvictions `json:"history_evictions,omitempty"`
}

// Show reads the state of an instance. It only reads, so `beamer ctl show`
// calls it directly, without going through the elected controller.
func Show(ctx context.Context, st store.Store, root, name string, now time.Time) (*View, error) {
	k := ring.InstanceKeys(root, name)
	cfg, err := ring.ReadInstance(ctx, st, k)
	if err != nil {
		return nil, err
	}
	dips, err := readDIPs(ctx, st, k)
	if err != nil {
		return nil, err
	}
	tab, ls, err := ring.NewFollower(st, k, ring.FollowerOptions{}).Load(ctx)
	if err != nil {
		return nil, err
	}
	v := &View{View: ctlstrategy.View{Instance: *cfg, Fragmentation: assign.Fragmentation(tab.Buckets), MCTSize: len(tab.MCT)}, Generation: tab.Generation, Load: ls}
	if tab.Cheetah != nil {
		v.CheetahLoads = tab.Cheetah.Loads
	}
	owned := map[forwarding.ServerID]int{}
	chained := map[forwarding.ServerID]int{}
	window := uint32(cfg.ChainWindow.Seconds())
	for _, b := range tab.Buckets {
		owned[b.Current]++
		if b.Changed+window > uint32(now.Unix()) {
			for _, id := range b.History[:b.History.Len()] {
				chained[id]++
			}
		}
	}
	v.Unowned = owned[forwarding.NoServer]
	var total uint64
	live := 0
	for _, d := range dips {
		total += uint64(d.EffectiveWeight())
		if d.EffectiveWeight() > 0 {
			live++
		}
	}
	if strat, err := strategyOf(cfg); err == nil {
		if r, ok := strat.(ctlstrategy.ShowReader); ok {
			if err := r.ReadShow(ctx, st, k, &v.View, now); err != nil {
				return nil, err
			}
		}
		v.Unit, v.Histories = "BUCKETS", strat.Histories()
		strat.Show(&v.View, live)
	}
	for _, id := range sortedKeys(dips) {
		d := dips[id]
		dv := DIPView{DIP: *d, Effective: d.EffectiveWeight(), Buckets: owned[id], Chained: chained[id],
			LoadShare: float64(owned[id]) / float64(len(tab.Buckets))}
		if total > 0 {
			dv.WeightShare = float64(d.EffectiveWeight()) / float64(total)
		}
		dv.Health = healthWord(d)
		dv.PenaltyNow = d.PenaltyNow(now, defaultHalfLife)
		v.DIPs = append(v.DIPs, dv)
	}
	if fo := failingOpen(dips); fo.active {
		v.FailOpen = true
		v.Warnings = append(v.Warnings, fmt.Sprintf("FAILING OPEN: all %d servers are down (%s); buckets stay with their last owners until a server passes its health checks", fo.down, fo.reasons))
	}
	showEvictions(ctx, st, k, v, now)
	for _, id := range sortedKeys(tab.Servers) {
		if tab.Servers[id].State == forwarding.Retired {
			v.Retired = append(v.Retired, id)
		}
	}
	v.redactSecrets()
	return v, nil
}

// redactSecrets replaces the instance's Cheetah keys with their key ids
// and fingerprints: a View is what read APIs print (`ctl show`, `ctl list`
// in every format), and whoever reads them must not be able to forge
// cookies.
func (v *View) redactSecrets() {
	if v.Instance.Cheetah == nil {
		return
	}
	c := *v.Instance.Cheetah
	v.CheetahKeys = c.Keys.View()
	c.Keys = cookie.Keys{}
	v.Instance.Cheetah = &c
}

// defaultHalfLife is the flap half-life `ctl show` decays penalties with
// (the controller's default; ctl does not know the running one's flags).
const defaultHalfLife = 5 * time.Minute

// healthWord is the health of a DIP as ctl show, ctl list and the
// controller's metrics name it.
func healthWord(d *DIP) string {
	switch {
	case d.Pending:
		return "pending"
	case d.Down && d.Suppressed:
		return "suppressed"
	case d.Down:
		return "down"
	}
	return "up"
}
