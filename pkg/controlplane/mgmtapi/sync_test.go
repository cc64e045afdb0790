package mgmtapi_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/mgmtapi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// syncCounting is a store.Syncer (as a ZooKeeper connection is) that
// counts the reads started without a Sync before them.
type syncCounting struct {
	store.Store
	synced   atomic.Bool
	syncs    atomic.Int32
	unsynced atomic.Int32
}

func (s *syncCounting) Sync(context.Context) error {
	s.syncs.Add(1)
	s.synced.Store(true)
	return nil
}

func (s *syncCounting) Get(ctx context.Context, key string) (store.Item, error) {
	if !s.synced.Load() {
		s.unsynced.Add(1)
	}
	return s.Store.Get(ctx, key)
}

// TestReadsSyncFirst: the API syncs a store that may serve stale reads
// (store.Syncer: ZooKeeper) before it answers a read, so a controller
// shows what was acknowledged through another controller's connection.
func TestReadsSyncFirst(t *testing.T) {
	st := &syncCounting{Store: storetest.EmbeddedT(t)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx10(t))
	done := make(chan struct{})
	b := &mgmtapi.StoreBackend{Store: st, Root: "/synctest", Identity: "ctl", AlwaysLead: true}
	go func() { mgmtapi.Serve(ctx, ln, b, mgmtapi.Options{}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := mgmtapi.Dial([]string{ln.Addr().String()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Instances(ctx); err != nil {
		t.Fatal(err)
	}
	st.synced.Store(false)
	c.Show(ctx, "web") // not found: what matters is how it was read
	if st.syncs.Load() != 2 || st.unsynced.Load() != 0 {
		t.Fatalf("two reads through the API: %d syncs, %d store reads before any sync; want 2 and 0", st.syncs.Load(), st.unsynced.Load())
	}
}
