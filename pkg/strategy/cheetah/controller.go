package cheetah

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/beamer"
)

// Controller is the controller's side of Cheetah: the bucket table is Beamer's (moves, histories, holds),
// for the clients without timestamps; clients with timestamps carry the
// server id in a cookie, so a server id is a slot in the server table that
// must never be given to another server while a connection may still name
// it: a removed server stays retired for the chain window after its removal
// and while any bucket history names it, and checkNewDIP refuses its id to
// another address meanwhile. Ids above cheetah.MaxID cannot be carried.
// Its own work is the keys: pushed to the agents with the loads read back
// (Tick, keys.go), switched and rotated (rotate.go), carried in the table
// (ExtraState), and servers held back until their agent has them (Held).
type Controller struct{ beamer.Controller }

func init() { ctlstrategy.Register(Controller{}) }

// NewState is the controller's memory of the agents (keys.go).
func (Controller) NewState() any { return newRuntime() }

func (Controller) Name() forwarding.Strategy { return forwarding.StrategyCheetah }

// A down server stays in the table: connections whose cookies name it
// still reach it (only it has them); it gets no new ones (not active).
func (Controller) DownState() forwarding.ServerState { return forwarding.Down }
func (Controller) DrainsRemoved() bool               { return true }

func (Controller) Show(v *ctlstrategy.View, live int) {
	o := v.Instance.Cheetah
	if o == nil {
		return
	}
	v.Details = append(v.Details, fmt.Sprintf("strategy cheetah: policy %s, cookie key id %d for new connections (key fingerprints %s, %s); %d buckets for clients without timestamps, fragmentation %.2f rules/DIP",
		o.Policy, o.Keys.Current, o.Keys.Keys[0].Fingerprint(), o.Keys.Keys[1].Fingerprint(), v.Instance.Buckets, v.Fragmentation))
	if o.Policy == forwarding.CheetahP2C {
		var loads []string
		for _, id := range slices.Sorted(maps.Keys(v.CheetahLoads)) {
			loads = append(loads, fmt.Sprintf("%d:%d", id, v.CheetahLoads[id]))
		}
		v.Details = append(v.Details, fmt.Sprintf("p2c loads the muxes run with (server:live connections; others 0): %s", strings.Join(loads, " ")))
	}
	switch {
	case !o.SwitchAt.IsZero():
		v.Details = append(v.Details, fmt.Sprintf("key rotation in progress: the muxes have the new key id %d; it becomes current for new connections at %s",
			o.Keys.Current^1, o.SwitchAt.UTC().Format(time.RFC3339)))
	case !o.Switched.IsZero():
		v.Details = append(v.Details, fmt.Sprintf("key id %d current since %s (connections older than that may still carry key id %d)",
			o.Keys.Current, o.Switched.UTC().Format(time.RFC3339), o.Keys.Current^1))
	}
}
