package controller

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// MaxWeight bounds DIP weights (forwarding.MaxWeight).
const MaxWeight = forwarding.MaxWeight

// NewDIP is one DIP of an add-dip request.
type NewDIP struct {
	ID     forwarding.ServerID `json:"id"`
	Addr   netip.Addr          `json:"addr"`
	Weight uint32              `json:"weight"`
}

// AddDIP records a new DIP and publishes the generation giving it its
// share of buckets. Adding the same DIP again (same id, address and
// weight) is a no-op, so a retried request after a controller crash
// succeeds.
func (c *Controller) AddDIP(ctx context.Context, name string, id forwarding.ServerID, addr netip.Addr, weight uint32) error {
	return c.AddDIPs(ctx, name, []NewDIP{{ID: id, Addr: addr, Weight: weight}})
}

// AddDIPs adds several DIPs in one operation: their records are written
// first (one commit for up to 50 DIPs; larger requests in commits of 50,
// commitBatches), then one rebalance gives them their shares. Added one request after the
// other, each addition would move buckets again, some of them buckets that
// had just moved. DIPs already present with the same address and weight
// are left as they are (a retried request succeeds).
//
// A server id still retired in the ring (removed recently, still in some
// bucket's history) may come back with the same address: it is activated
// again with its histories intact, so connections it still holds keep
// being daisy-chained to it (a rolling restart).
//
// With health checks running, new DIPs are pending: they own no bucket
// until their first successful probe.
func (c *Controller) AddDIPs(ctx context.Context, name string, add []NewDIP) error {
	in, err := c.instance(ctx, name)
	if err != nil {
		return err
	}
	if len(add) == 0 {
		return badf("no DIP to add")
	}
	// Read the other instances' claims and index this one's addresses once
	// per request: per DIP, a request of 32K DIPs on an instance of 32K
	// took minutes (etcd lists every key under the instances to name them).
	cl, err := c.claims(ctx, false)
	if err != nil {
		return err
	}
	used := make(map[netip.Addr]forwarding.ServerID, len(in.dips))
	for id, d := range in.dips {
		used[d.Addr] = id
	}
	ids := map[forwarding.ServerID]bool{}
	addrs := map[netip.Addr]forwarding.ServerID{}
	var fresh []*DIP
	for _, n := range add {
		if err := c.checkNewDIP(in, n, cl, used); err != nil {
			return err
		}
		if ids[n.ID] {
			return badf("server id %d listed twice", n.ID)
		}
		if other, dup := addrs[n.Addr]; dup {
			return badf("DIP address %v listed twice (server ids %d and %d)", n.Addr, other, n.ID)
		}
		ids[n.ID], addrs[n.Addr] = true, n.ID
		if d, ok := in.dips[n.ID]; ok && d.Addr == n.Addr && d.Weight == n.Weight && d.State != Removing {
			continue // already there: a retry
		}
		fresh = append(fresh, &DIP{ID: n.ID, Addr: n.Addr, Weight: n.Weight, State: Adding})
	}
	if uint64(len(in.dips)+len(fresh))+1 > uint64(in.config.Buckets) {
		return badf("instance %q has %d buckets: it can serve at most %d DIPs (B must be larger than the DIP count)", name, in.config.Buckets, in.config.Buckets-1)
	}
	pending := c.opts.PendingUntilProbed && in.config.HealthProbe().Kind != forwarding.HealthNone
	var ops []store.Op
	for _, d := range fresh {
		if pending {
			d.Pending = true
			d.Reason = "pending: no successful probe yet"
		}
		ops = append(ops, store.IfAbsent(dipKey(in.k, d.ID)), putDIP(d, in.k))
	}
	if err := c.commitBatches(ctx, in, ops); err != nil {
		return err
	}
	for _, d := range fresh {
		in.dips[d.ID] = d
	}
	return c.Reconcile(ctx, name)
}

// checkNewDIP validates one DIP of an add-dip request: the server itself
// against its instance (forwarding.Instance.CheckServer: id, address,
// weight), then against the store: no clash with a VIP (cl holds every
// instance's VIPs) or another DIP of the instance (used), no retired id
// coming back with another address.
func (c *Controller) checkNewDIP(in *instance, n NewDIP, cl *forwarding.Claims, used map[netip.Addr]forwarding.ServerID) error {
	id, addr, weight, name := n.ID, n.Addr, n.Weight, in.config.Name
	if err := in.config.CheckServer(id, addr, weight); err != nil {
		return badf("%v", err)
	}
	if err := cl.AddDIP(name, id, addr); err != nil {
		return badf("%v", err)
	}
	if d, ok := in.dips[id]; ok {
		if d.Addr == addr && d.Weight == weight && d.State != Removing {
			return nil
		}
		return badf("server id %d is already used by DIP %v (%s)", id, d.Addr, d.State)
	}
	if other, ok := used[addr]; ok {
		return badf("DIP address %v is already used by server id %d", addr, other)
	}
	if s, ok := in.w.Table().Servers[id]; ok && s.Addr != addr {
		return badf("server id %d was %v until recently and is still daisy-chained to (chaining window %v); wait or pick another id", id, s.Addr, in.config.ChainWindow)
	}
	return nil
}

func (c *Controller) dip(ctx context.Context, name string, id forwarding.ServerID) (*instance, *DIP, error) {
	in, err := c.instance(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	d, ok := in.dips[id]
	if !ok {
		return nil, nil, fmt.Errorf("%w: instance %q has no DIP with server id %d", ErrNotFound, name, id)
	}
	return in, d, nil
}

// update writes a changed copy of a DIP record, then reconciles.
func (c *Controller) update(ctx context.Context, name string, id forwarding.ServerID, change func(*DIP) error) error {
	in, d, err := c.dip(ctx, name, id)
	if err != nil {
		return err
	}
	nd := *d
	if err := change(&nd); err != nil {
		return err
	}
	if nd != *d {
		if err := c.commit(ctx, in, putDIP(&nd, in.k)); err != nil {
			return err
		}
		in.dips[id] = &nd
	}
	return c.Reconcile(ctx, name)
}

// RemoveDIP removes a DIP the paper's way: weight 0, rebalance (its
// buckets move away and keep it as previous owner, so its connections are
// daisy-chained to it), then the record goes; its server id stays retired
// in the ring until the chaining window is over.
func (c *Controller) RemoveDIP(ctx context.Context, name string, id forwarding.ServerID) error {
	return c.RemoveDIPs(ctx, name, []forwarding.ServerID{id})
}

// RemoveDIPs removes several DIPs in one operation: all are marked in one
// commit, then one rebalance moves their buckets straight to the DIPs that
// stay. Removing them one request after the other instead can hand a bucket
// to a DIP that leaves next, moving it twice within its chaining window;
// the bucket's history (up to K owners) keeps both reachable, but one
// request moves each bucket once and keeps the histories short.
func (c *Controller) RemoveDIPs(ctx context.Context, name string, ids []forwarding.ServerID) error {
	if len(ids) == 0 {
		return badf("no DIP to remove")
	}
	in, err := c.instance(ctx, name)
	if err != nil {
		return err
	}
	var ops []store.Op
	changed := map[forwarding.ServerID]*DIP{}
	for _, id := range ids {
		d, ok := in.dips[id]
		if !ok {
			return fmt.Errorf("%w: instance %q has no DIP with server id %d", ErrNotFound, name, id)
		}
		if _, dup := changed[id]; dup {
			return badf("DIP %d listed twice", id)
		}
		nd := *d
		nd.State = Removing
		changed[id] = &nd
		if nd != *d {
			ops = append(ops, putDIP(&nd, in.k))
		}
	}
	if err := c.commitBatches(ctx, in, ops); err != nil {
		return err
	}
	for id, d := range changed {
		in.dips[id] = d
	}
	return c.Reconcile(ctx, name)
}

// SetWeight changes a DIP's weight and rebalances.
func (c *Controller) SetWeight(ctx context.Context, name string, id forwarding.ServerID, weight uint32) error {
	if err := forwarding.CheckWeight(weight); err != nil {
		return badf("%v", err)
	}
	return c.update(ctx, name, id, func(d *DIP) error {
		if d.State == Removing {
			return badf("DIP %d is being removed", id)
		}
		d.Weight = weight
		return nil
	})
}

// Drain takes a DIP out of rotation (drained=true) or back in, keeping its
// record and weight: its buckets move to the others with daisy chaining,
// so its connections finish.
func (c *Controller) Drain(ctx context.Context, name string, id forwarding.ServerID, drained bool) error {
	return c.update(ctx, name, id, func(d *DIP) error {
		if d.State == Removing {
			return badf("DIP %d is being removed", id)
		}
		d.Drained = drained
		return nil
	})
}

// SetHealth records a health-check verdict and moves buckets accordingly.
func (c *Controller) SetHealth(ctx context.Context, name string, id forwarding.ServerID, up bool) error {
	return c.update(ctx, name, id, func(d *DIP) error {
		if d.Down == !up && (!up || !d.Pending) {
			return nil
		}
		if up {
			d.Pending = false
		}
		d.Down = !up
		d.HealthChanged = c.now().UTC().Truncate(time.Second)
		return nil
	})
}

// ClearDamping forgets a DIP's flap penalty and suppression (`ctl health
// clear`): a DIP kept down only because it flapped comes up at the next
// successful probes.
func (c *Controller) ClearDamping(ctx context.Context, name string, id forwarding.ServerID) error {
	return c.update(ctx, name, id, func(d *DIP) error {
		if d.Penalty == 0 && !d.Suppressed {
			return nil
		}
		d.Penalty, d.PenaltyAt, d.Suppressed = 0, time.Time{}, false
		d.Reason = "damping cleared by the operator"
		return nil
	})
}
