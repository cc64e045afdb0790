package declarative

import (
	"context"
	"fmt"
	"net/netip"
	"slices"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Export reads every instance through op into a document: configuration,
// servers with id, address, weight and drain state, sorted by name and id.
// Servers being removed are left out (they are on their way out); health
// is live state, not configuration, and is not exported; neither are
// cheetah keys.
func Export(ctx context.Context, op Operator) (*Document, error) {
	names, err := op.Instances(ctx)
	if err != nil {
		return nil, fmt.Errorf("list instances: %w", err)
	}
	names = slices.Clone(names)
	slices.Sort(names)
	d := &Document{APIVersion: APIVersion, Instances: []Instance{}}
	for _, n := range names {
		v, err := op.Show(ctx, n)
		if err != nil {
			return nil, fmt.Errorf("instance %q: %w", n, err)
		}
		d.Instances = append(d.Instances, fromView(v))
	}
	return d, nil
}

func fromView(v *controller.View) Instance {
	in := fromConfig(&v.Instance)
	for _, s := range v.DIPs {
		if s.State == controller.Removing {
			if in.removing == nil {
				in.removing = map[forwarding.ServerID]netip.Addr{}
			}
			in.removing[s.ID] = s.Addr
			continue
		}
		in.Servers = append(in.Servers, Server{ID: s.ID, Address: s.Addr, Weight: s.Weight, Drained: s.Drained})
	}
	slices.SortFunc(in.Servers, func(a, b Server) int { return int(a.ID) - int(b.ID) })
	return in
}
