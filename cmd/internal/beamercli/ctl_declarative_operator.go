package beamercli

import (
	"context"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"

	"github.com/beamer-lb/beamer/pkg/controlplane/declarative"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
)

// The declarative commands (export, diff, apply) work through the
// management API's client, as every ctl command does: it is their
// declarative.Operator.
var _ declarative.Operator = (*mgmtapi.Client)(nil)

// withOperator runs fn with a client of the API f names. Each change
// waits up to --timeout for the controller's verdict (the whole run is
// not bounded: an apply may make many changes).
func (f *ctlFlags) withOperator(fn func(ctx context.Context, op declarative.Operator) error) error {
	c, err := f.api.client()
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(context.Background(), &timedOperator{c: c, f: f})
}

// timedOperator bounds each call of the client by --timeout.
type timedOperator struct {
	c *mgmtapi.Client
	f *ctlFlags
}

var _ declarative.Operator = (*timedOperator)(nil)

func (o *timedOperator) Submit(ctx context.Context, r controller.Request) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, *o.f.timeout+2*time.Second) // as submitResult
	defer cancel()
	return o.c.Submit(ctx, r)
}

func (o *timedOperator) Show(ctx context.Context, name string) (*controller.View, error) {
	ctx, cancel := context.WithTimeout(ctx, *o.f.timeout)
	defer cancel()
	return o.c.Show(ctx, name)
}

func (o *timedOperator) Instances(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, *o.f.timeout)
	defer cancel()
	return o.c.Instances(ctx)
}
