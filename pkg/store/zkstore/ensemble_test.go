package zkstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/store/zkstore"
)

// TestEnsembleConformance: the conformance suite on a 3-server ensemble
// (storetest.StartZooKeeperEnsemble), each connection listing every
// server with another one first; then one server is killed and a client
// listing it first still writes, and another client, after a Sync, reads
// the write.
func TestEnsembleConformance(t *testing.T) {
	ss := storetest.StartZooKeeperEnsemble(t, 3)
	var next atomic.Uint32
	open := func(t *testing.T, servers []string) store.Store {
		s, err := zkstore.Open(context.Background(), zkstore.Config{Servers: servers, SessionTimeout: 2 * time.Second, DialTimeout: 40 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, storetest.ZooKeeperServers(ss, int(next.Add(1)%3)))
	})

	deadFirst := open(t, storetest.ZooKeeperServers(ss, 0))
	defer deadFirst.Close()
	other := open(t, storetest.ZooKeeperServers(ss, 1))
	defer other.Close()
	ss[0].Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := deadFirst.Commit(ctx, store.Put("/ensemble/k", []byte("after")))
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("write with a server dead, through a client listing it first: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// ZooKeeper reads are sequentially consistent: after a Sync
	// (store.Syncer) the other server shows the acknowledged write.
	if err := store.SyncReads(ctx, other); err != nil {
		t.Fatal(err)
	}
	if it, err := other.Get(ctx, "/ensemble/k"); err != nil || string(it.Value) != "after" {
		t.Fatalf("read through another server after a sync: %q, %v", it.Value, err)
	}
}
