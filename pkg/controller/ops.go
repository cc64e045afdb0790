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

// AddDIP records a new DIP and publishes the generation giving it its
// share of buckets. Adding the same DIP again (same id, address and
// weight) is a no-op, so a retried request after a controller crash
// succeeds.
func (c *Controller) AddDIP(ctx context.Context, name string, id forwarding.ServerID, addr netip.Addr, weight uint32) error {
	in, err := c.instance(ctx, name)
	if err != nil {
		return err
	}
	if !id.Valid() {
		return badf("server id %d is outside %d–%d (ids up to 1024 are service ports)", id, forwarding.MinServerID, forwarding.MaxServerID)
	}
	if err := c.checkNewDIP(ctx, name, id, addr); err != nil {
		return err
	}
	if err := forwarding.CheckWeight(weight); err != nil {
		return badf("%v", err)
	}
	if d, ok := in.dips[id]; ok {
		if d.Addr == addr && d.Weight == weight && d.State != Removing {
			return c.Reconcile(ctx, name)
		}
		return badf("server id %d is already used by DIP %v (%s)", id, d.Addr, d.State)
	}
	for _, d := range in.dips {
		if d.Addr == addr {
			return badf("DIP address %v is already used by server id %d", addr, d.ID)
		}
	}
	if s, ok := in.w.Table().Servers[id]; ok && s.Addr != addr {
		return badf("server id %d was %v until recently and is still daisy-chained to (chaining window %v); wait or pick another id", id, s.Addr, in.config.ChainWindow)
	}
	if uint64(len(in.dips))+1 >= uint64(in.config.Buckets) {
		return badf("instance %q has %d buckets: it can serve at most %d DIPs (B must be larger than the DIP count)", name, in.config.Buckets, in.config.Buckets-1)
	}
	d := &DIP{ID: id, Addr: addr, Weight: weight, State: Adding}
	if err := c.commit(ctx, in, store.IfAbsent(dipKey(in.k, id)), putDIP(d, in.k)); err != nil {
		return err
	}
	in.dips[id] = d
	return c.Reconcile(ctx, name)
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
// the packet names only the latest previous owner, so the first owner's
// connections in that bucket would be lost.
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
	if err := c.commit(ctx, in, ops...); err != nil {
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
		if d.Down == !up {
			return nil
		}
		d.Down = !up
		d.HealthChanged = c.now().UTC().Truncate(time.Second)
		return nil
	})
}
