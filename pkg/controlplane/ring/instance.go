package ring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// ErrNoInstance is returned for an instance without configuration.
var ErrNoInstance = errors.New("ring: no such instance")

// ReadInstance reads and validates the configuration of an instance.
func ReadInstance(ctx context.Context, st store.Store, k Keys) (*forwarding.Instance, error) {
	it, err := st.Get(ctx, k.Config())
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoInstance, k.Instance)
	}
	if err != nil {
		return nil, err
	}
	var in forwarding.Instance
	if err := json.Unmarshal(it.Value, &in); err != nil {
		return nil, fmt.Errorf("%s: %w", k.Config(), err)
	}
	if err := in.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", k.Config(), err)
	}
	return &in, nil
}

// Delete removes an instance: the configuration and both pointers go in
// one commit, so muxes see the instance disappear at once; the rest of
// its tree is deleted afterwards (and by the controller's start-up sweep
// if this is interrupted).
func Delete(ctx context.Context, st store.Store, k Keys) error {
	if _, err := st.Get(ctx, k.Config()); errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: %s", ErrNoInstance, k.Instance)
	}
	if err := st.Commit(ctx, store.Delete(k.Config()), store.Delete(k.LatestGen()), store.Delete(k.LatestBlob())); err != nil {
		return err
	}
	return store.DeleteTree(ctx, st, k.Instance)
}
