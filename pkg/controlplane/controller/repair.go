package controller

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// The controller is authoritative for configuration and DIPs; the ring is
// derived state it can always publish again. So a ring it cannot trust is
// never an error to retry forever: it is repaired (ring.Repair) by a
// resync at a new incarnation, and the operation that found it goes on.
//
// A ring is untrusted when it does not load (unreadable blob or delta,
// missing or unparsable pointers, gaps, latest-blob after latest-gen),
// when it differs from what this controller published (a store restored
// from an older backup, a write behind its back), and when this
// controller has not published it yet in its leadership: every elected
// controller starts its own incarnation, so whatever a predecessor or a
// backup left behind, the pair muxes see next is above all earlier ones.

// damaged tells a ring to repair from a store error to retry.
func damaged(err error) bool {
	return errors.Is(err, ring.ErrCorrupt) || errors.Is(err, ring.ErrDiverged) || errors.Is(err, store.ErrNotFound)
}

// follows reports whether the store's pair p can be what this controller
// published last (hw), or its next publication whose answer was lost.
func follows(hw, p ring.Pair) bool {
	return p == hw || (p.Incarnation == hw.Incarnation && p.Generation == hw.Generation+1)
}

// openRing returns a writer for an instance whose configuration exists,
// repairing the ring first when it cannot be trusted.
func (c *Controller) openRing(ctx context.Context, name string, k ring.Keys) (*ring.Writer, error) {
	reason, repair := c.repairs[name]
	if !repair && c.started[name] {
		w, err := ring.Open(ctx, c.st, k, c.opts.Ring)
		switch {
		case err == nil:
			hw := c.seen[name]
			if follows(hw, w.Pair()) {
				c.seen[name], c.last[name] = w.Pair(), w
				return w, nil
			}
			reason = fmt.Sprintf("the store names %v but this controller published %v last", w.Pair(), hw)
		case damaged(err):
			reason = err.Error()
		default:
			return nil, err
		}
	}
	var known *forwarding.Table
	if w, ok := c.last[name]; ok {
		known = w.Table()
	}
	w, rep, err := ring.Repair(ctx, c.st, k, c.opts.Ring, c.seen[name], known)
	if w == nil {
		return nil, fmt.Errorf("repair of the ring of %s: %w", name, err)
	}
	if err != nil {
		c.log.Warn("ring repair published; cleaning is finished later", "instance", name, "error", err)
	}
	delete(c.repairs, name)
	c.started[name] = true
	c.seen[name], c.last[name] = w.Pair(), w
	fields := []any{"instance", name, "incarnation", rep.To.Incarnation, "generation", rep.To.Generation,
		"store_named", rep.From.String(), "table_from", rep.Salvaged, "published", rep.To.String(), "removed", rep.Removed}
	if reason == "" && len(rep.Found) == 0 {
		c.log.Info("new incarnation for this controller", fields...)
	} else {
		c.log.Warn("ring repaired", append(fields, "reason", reason, "found", strings.Join(rep.Found, "; "))...)
	}
	return w, nil
}

// published records the pair just published.
func (c *Controller) published(in *instance) {
	c.seen[in.config.Name], c.last[in.config.Name] = in.w.Pair(), in.w
	p := in.w.Pair()
	c.metrics.observePublished(in.config.Name, p.Incarnation, p.Generation)
	in.log.Info("generation published", "incarnation", p.Incarnation, "generation", p.Generation)
}

// verifyCached checks that the cached instance's ring is still what this
// controller published; damage marks it for repair and drops the cache.
func (c *Controller) verifyCached(ctx context.Context, in *instance, full bool) error {
	err := in.w.Verify(ctx, full)
	if err == nil || !damaged(err) {
		return err
	}
	c.repairs[in.config.Name] = err.Error()
	c.forget(in)
	return nil
}

// checkRings verifies every instance's ring in full (loading it as a mux
// would) and repairs those that fail, completing nothing else: the
// elected controller notices damage within one check period even when no
// request comes.
func (c *Controller) checkRings(ctx context.Context) error {
	names, err := c.Instances(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		in, cached := c.cache[n]
		if cached {
			if err := c.verifyCached(ctx, in, true); err != nil {
				errs = append(errs, fmt.Errorf("instance %s: %w", n, err))
				continue
			}
			if _, still := c.cache[n]; still {
				continue
			}
		}
		if err := c.Reconcile(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}
