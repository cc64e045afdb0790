package store

import "context"

// Syncer is a Store whose reads may lag writes acknowledged through other
// connections: a ZooKeeper connection reads from the one server it is
// connected to, which may not have applied the ensemble's latest writes
// yet (sequential consistency). Sync makes the reads this connection
// starts afterwards see every write acknowledged before Sync was called.
// etcd's reads are linearizable already; its Store is no Syncer.
type Syncer interface {
	Sync(ctx context.Context) error
}

// SyncReads calls s.Sync if s is a Syncer: a reader that must show what
// was acknowledged through another connection (a standby controller
// answering `ctl show` right after a change the elected one made) calls it
// before its reads.
func SyncReads(ctx context.Context, s Store) error {
	if y, ok := s.(Syncer); ok {
		return y.Sync(ctx)
	}
	return nil
}
