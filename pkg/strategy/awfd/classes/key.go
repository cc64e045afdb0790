package classes

import (
	"context"
	"errors"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/store"
)

// Key is where an instance's class record lives: beside its ring, not in
// it. One key overwritten in place: polls at 4 Hz never add generations,
// and a watcher reads only the newest value.
func Key(k ring.Keys) string { return k.Instance + "/awfd" }

// Read returns the instance's stored record, nil when there is none yet.
func Read(ctx context.Context, st store.Store, k ring.Keys) (*Record, error) {
	it, err := st.Get(ctx, Key(k))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return Decode(it.Value)
}
