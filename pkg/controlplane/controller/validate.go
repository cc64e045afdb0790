package controller

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// Conflicts between instances (a VIP in two instances, a VIP that is a
// DIP, a DIP that is a VIP) cannot be seen by forwarding.Instance.Validate,
// which looks at one instance. The controller is the only writer of
// instance data and runs requests one at a time, so checking the store's
// instances just before the intent commit is enough: nothing can slip in
// between. The rules themselves are forwarding.Claims', shared with the
// static mux files.

// claims reads what every instance of the store claims. Instance configs
// are read without validation: an instance stored before a rule existed
// still claims its addresses. withDIPs also reads every DIP record and id
// record (needed for a new VIP; a new DIP only needs the VIPs).
func (c *Controller) claims(ctx context.Context, withDIPs bool) (*forwarding.Claims, error) {
	names, err := c.st.Children(ctx, ring.InstancesKey(c.root))
	if err != nil {
		return nil, err
	}
	cl := forwarding.NewClaims()
	var dips []func() error
	for _, n := range names {
		if in, ok := c.cache[n]; ok {
			// The controller's own view (it is the only writer): no reads,
			// which matters with tens of thousands of DIPs.
			cl.AddInstance(in.config)
			if withDIPs {
				dips = append(dips, func() error {
					for id, d := range in.dips {
						cl.AddDIP(n, id, d.Addr)
					}
					for id, r := range in.ids {
						cl.AddDIP(n, id, r.Addr)
					}
					return nil
				})
			}
			continue
		}
		k := ring.InstanceKeys(c.root, n)
		it, err := c.st.Get(ctx, k.Config())
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var in forwarding.Instance
		if json.Unmarshal(it.Value, &in) != nil {
			continue // unreadable: the repair path's business, claims nothing
		}
		in.Name = n
		cl.AddInstance(&in) // existing conflicts are recorded, not reported
		if !withDIPs {
			continue
		}
		dips = append(dips, func() error {
			ds, err := readDIPs(ctx, c.st, k)
			if err != nil {
				return err
			}
			for _, d := range ds {
				cl.AddDIP(n, d.ID, d.Addr)
			}
			// Retired ids are still daisy-chained to: their address is
			// still a server's.
			ids, err := readIDs(ctx, c.st, k)
			if err != nil {
				return err
			}
			for id, r := range ids {
				cl.AddDIP(n, id, r.Addr)
			}
			return nil
		})
	}
	// DIPs after all VIPs, so that recording an old conflict never depends
	// on the order instances are listed in.
	for _, read := range dips {
		if err := read(); err != nil {
			return nil, err
		}
	}
	return cl, nil
}

// checkNewInstance refuses a VIP of in that another instance uses as a VIP
// or as a DIP address.
func (c *Controller) checkNewInstance(ctx context.Context, in *forwarding.Instance) error {
	cl, err := c.claims(ctx, true)
	if err != nil {
		return err
	}
	if err := cl.AddInstance(in); err != nil {
		return badf("%v", err)
	}
	return nil
}
