package cheetah

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// badf is a refused request with its reason.
var badf = ctlstrategy.BadRequest

// DefaultSettle is KeyRotation.Settle's default: muxd withdraws a mux that lags
// more than 30 s behind the store, so every mux still announcing the VIP
// has the new key by then.
const DefaultSettle = 40 * time.Second

// RotateKey starts a key rotation: a new random key goes into the
// slot new connections do not use, the muxes get it in the next
// generation, and Settle later the controller makes it current (the round,
// Tick), pushing the switch to the agents. Connections keep the key
// id they started with, so nothing breaks as long as no connection is older
// than the switch before this one (MinAge).
func (Controller) RotateKey(ctx context.Context, c ctlstrategy.Ctl, in ctlstrategy.Instance, rot ctlstrategy.KeyRotation) (string, error) {
	name := in.Config().Name
	if in.Config().Cheetah == nil {
		return "", badf("instance %q has no cheetah options", name)
	}
	if rot.Settle < 0 || rot.MinAge < 0 {
		return "", badf("settle and min-age must not be negative")
	}
	o := *in.Config().Cheetah
	now := c.Now()
	if !o.SwitchAt.IsZero() {
		return "", badf("a rotation is in progress: key id %d becomes current at %s", o.Keys.Current^1, o.SwitchAt.UTC().Format(time.RFC3339))
	}
	if !rot.Force {
		if !o.Switched.IsZero() && now.Sub(o.Switched) < rot.MinAge {
			return "", badf("key id %d became current %v ago: connections opened before then still carry key id %d, which this rotation would overwrite; wait until %s or lower --min-age (or --force)",
				o.Keys.Current, now.Sub(o.Switched).Round(time.Second), o.Keys.Current^1, o.Switched.Add(rot.MinAge).UTC().Format(time.RFC3339))
		}
		if po := optionsOf(c); po != nil {
			var missing []forwarding.ServerID
			dips := in.DIPs()
			for _, id := range slices.Sorted(maps.Keys(dips)) {
				d := dips[id]
				if s, ok := in.Table().Servers[id]; ok && s.State == forwarding.Active && !confirmed(c, po, name, id, d.Addr, o.Keys) {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return "", badf("the agents of servers %v have not confirmed the current keys: after this rotation they would write cookies with a key the muxes no longer have (fix the agents' API, or --force)", missing)
			}
		}
	}
	k, err := cookie.NewKey()
	if err != nil {
		return "", err
	}
	spare := o.Keys.Current ^ 1
	o.Keys.Keys[spare] = k
	o.SwitchAt = now.Add(rot.Settle).UTC()
	cfg := *in.Config()
	cfg.Cheetah = &o
	if err := in.WriteConfig(ctx, &cfg); err != nil {
		return "", err
	}
	if err := c.Reconcile(ctx, name); err != nil {
		return "", err
	}
	in, err = c.Load(ctx, name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("new key in slot %d published to the muxes (generation %d); new connections take key id %d from %s (settle %v); key id %d stays valid for the connections that carry it",
		spare, in.Table().Generation, spare, o.SwitchAt.Format(time.RFC3339), rot.Settle, o.Keys.Current), nil
}
