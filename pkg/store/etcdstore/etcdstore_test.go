package etcdstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

func opener(endpoint string) storetest.Opener {
	return func(t *testing.T) store.Store {
		s, err := etcdstore.Open(context.Background(), etcdstore.Config{
			Endpoints: []string{endpoint},
			LeaseTTL:  2 * time.Second, // ElectionAfterClose waits for lease expiry
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// TestConformanceEmbedded runs the suite against etcd embedded in the test
// process, as `beamer` runs it by default.
func TestConformanceEmbedded(t *testing.T) {
	e, err := etcdstore.StartEmbedded(etcdstore.EmbedConfig{Dir: t.TempDir(), ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	storetest.Run(t, opener(e.Endpoint()))
}

// TestConformanceProcess runs the suite against an etcd server process.
func TestConformanceProcess(t *testing.T) {
	srv := storetest.StartEtcd(t)
	storetest.Run(t, opener("http://"+srv.Addr))
}

// TestOpenEmbeddedShares checks that a second process-level Open of the
// same data directory connects to the running server instead of starting
// another one, and that Close of the owner stops it.
func TestOpenEmbeddedShares(t *testing.T) {
	dir := t.TempDir()
	ctx := storetest.Context(t)
	ecfg := etcdstore.EmbedConfig{Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0"}
	owner, err := etcdstore.OpenEmbedded(ctx, ecfg, etcdstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if err := owner.Commit(ctx, store.Put("/shared", []byte("yes"))); err != nil {
		t.Fatal(err)
	}
	guest, err := etcdstore.OpenEmbedded(ctx, ecfg, etcdstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer guest.Close()
	if it, err := guest.Get(ctx, "/shared"); err != nil || string(it.Value) != "yes" {
		t.Fatalf("guest reads %q, %v", it.Value, err)
	}
	if got := guest.Client().Endpoints(); len(got) != 1 || got[0] != owner.Client().Endpoints()[0] {
		t.Fatalf("guest endpoints %v, owner %v", got, owner.Client().Endpoints())
	}
}

func TestOpenUnreachable(t *testing.T) {
	start := time.Now()
	_, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{storetest.FreeAddr(t)}, DialTimeout: 500 * time.Millisecond})
	if err == nil {
		t.Fatal("Open of an address nobody listens on succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Open took %v to fail", d)
	}
	t.Log(err)
}
