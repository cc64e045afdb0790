package mgmtapi

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/controller"
	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi/mgmtv1"
	"github.com/beamer-lb/beamer/pkg/store"
)

// StoreBackend answers the API from the controller's own store, with the
// mechanisms ctl used before the API: controller.SubmitResult for
// changes, controller.Show for views. List and Lookup build ctl's
// documents (cmd/beamer owns their format).
type StoreBackend struct {
	Store    store.Store
	Root     string
	Identity string // this controller's election identity
	// ListJSON is `ctl list -o json`'s document; LookupJSON `ctl lookup`'s.
	ListJSON   func(ctx context.Context, st store.Store, root string) ([]byte, error)
	LookupJSON func(ctx context.Context, st store.Store, root string, r *mgmtv1.LookupRequest) ([]byte, error)
	// AlwaysLead makes this backend answer as the elected controller
	// whatever the election says (tests of a store filled without one).
	AlwaysLead bool
}

// APIKey is where the controller named identity publishes its API
// address, beside the election key: standbys forward calls there.
func APIKey(root, identity string) string {
	return root + "/controller/api/" + url.PathEscape(identity)
}

// Publish writes this controller's API address under APIKey.
func (b *StoreBackend) Publish(ctx context.Context, addr string) error {
	return b.Store.Commit(ctx, store.Put(APIKey(b.Root, b.Identity), []byte(addr)))
}

// Unpublish removes it (best effort, on shutdown).
func (b *StoreBackend) Unpublish(ctx context.Context) error {
	return b.Store.Commit(ctx, store.Delete(APIKey(b.Root, b.Identity)))
}

// Leader says who is elected and where its API is.
func (b *StoreBackend) Leader(ctx context.Context) (self bool, name, apiAddr string, err error) {
	if b.AlwaysLead {
		return true, b.Identity, "", nil
	}
	name, err = b.Store.Leader(ctx, controller.ElectionKey(b.Root))
	if errors.Is(err, store.ErrNotFound) {
		return false, "", "", errNoLeader
	}
	if err != nil {
		return false, "", "", err
	}
	if name == b.Identity {
		return true, name, "", nil
	}
	it, err := b.Store.Get(ctx, APIKey(b.Root, name))
	if err != nil {
		return false, name, "", fmt.Errorf("controller %q is elected but its API address is not published: %w", name, err)
	}
	return false, name, string(it.Value), nil
}

var errNoLeader = errors.New("no controller is elected (start `beamer controller`)")

func (b *StoreBackend) Submit(ctx context.Context, r controller.Request) (string, error) {
	timeout := DefaultTimeout
	if d, ok := ctx.Deadline(); ok {
		// leave the answer a second to travel back
		timeout = max(time.Until(d)-time.Second, time.Second)
	}
	return controller.SubmitResult(ctx, b.Store, b.Root, r, timeout)
}

func (b *StoreBackend) Show(ctx context.Context, name string) (*controller.View, error) {
	return controller.Show(ctx, b.Store, b.Root, name, time.Now())
}

func (b *StoreBackend) Instances(ctx context.Context) ([]string, error) {
	return controller.New(b.Store, b.Root, controller.Options{}).Instances(ctx)
}

func (b *StoreBackend) Controller(ctx context.Context) string {
	name, err := b.Store.Leader(ctx, controller.ElectionKey(b.Root))
	if err != nil {
		return ""
	}
	return name
}
