package store

import "context"

// Fenced returns a Store whose every Commit carries the fence of l, so that
// every write fails with ErrConflict once l is no longer the leadership of
// record. The controller writes only through a fenced Store.
func Fenced(s Store, l Leadership) Store { return &fenced{Store: s, lead: l} }

type fenced struct {
	Store
	lead Leadership
}

func (f *fenced) Commit(ctx context.Context, ops ...Op) error {
	all := make([]Op, 0, len(ops)+1)
	all = append(all, f.lead.Fence())
	return f.Store.Commit(ctx, append(all, ops...)...)
}
