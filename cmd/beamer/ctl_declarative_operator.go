package main

import (
	"context"
	"time"

	"github.com/beamer-lb/beamer/pkg/controller"
	"github.com/beamer-lb/beamer/pkg/declarative"
	"github.com/beamer-lb/beamer/pkg/store"
)

// storeOperator is declarative.Operator over the store, as the other ctl
// commands work today: requests to the elected controller, reads
// straight from the store. (The management API's client replaces it.)
type storeOperator struct {
	st      store.Store
	root    string
	timeout time.Duration
}

var _ declarative.Operator = (*storeOperator)(nil)

func (o *storeOperator) Submit(ctx context.Context, r controller.Request) (string, error) {
	return controller.SubmitResult(ctx, o.st, o.root, r, o.timeout)
}

func (o *storeOperator) Show(ctx context.Context, name string) (*controller.View, error) {
	return controller.Show(ctx, o.st, o.root, name, time.Now())
}

func (o *storeOperator) Instances(ctx context.Context) ([]string, error) {
	return controller.New(o.st, o.root, controller.Options{}).Instances(ctx)
}

// withOperator opens the store of f and runs fn with an operator over it.
func (f *ctlFlags) withOperator(fn func(ctx context.Context, op declarative.Operator) error) error {
	ctx := context.Background()
	st, t, err := openStore(ctx, *f.store)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(ctx, &storeOperator{st: st, root: t.Root, timeout: *f.timeout})
}
