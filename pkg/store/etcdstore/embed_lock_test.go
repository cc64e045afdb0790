package etcdstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestOpenEmbeddedRace opens one directory from several openers at once, as
// `beamer controller &` followed at once by `beamer ctl …` does: exactly one
// starts a server, the others wait for its endpoint and share it.
func TestOpenEmbeddedRace(t *testing.T) {
	dir := t.TempDir()
	ctx := storetest.Context(t)
	ecfg := etcdstore.EmbedConfig{Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0"}
	const n = 3
	stores := make([]*etcdstore.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = etcdstore.OpenEmbedded(ctx, ecfg, etcdstore.Config{})
		}()
	}
	wg.Wait()
	endpoints := map[string]bool{}
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("opener %d: %v", i, errs[i])
		}
		defer s.Close()
		endpoints[s.Client().Endpoints()[0]] = true
	}
	if len(endpoints) != 1 {
		t.Fatalf("%d servers started for one directory: %v", len(endpoints), endpoints)
	}
	if err := stores[0].Commit(ctx, store.Put("/raced", []byte("one"))); err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		if it, err := s.Get(ctx, "/raced"); err != nil || string(it.Value) != "one" {
			t.Errorf("opener %d reads %q, %v", i, it.Value, err)
		}
	}
}

// TestOpenEmbeddedClientWaits starts a client (WaitForServer, as `beamer
// ctl`) a moment before the owner (the controller): the client must use the
// owner's server, not serve the store itself for the life of one command
// while the owner connects to it and then loses it.
func TestOpenEmbeddedClientWaits(t *testing.T) {
	dir := t.TempDir()
	ctx := storetest.Context(t)
	owner := etcdstore.EmbedConfig{Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0"}
	client := owner
	client.WaitForServer = 3 * time.Second
	type opened struct {
		s   *etcdstore.Store
		err error
	}
	got := make(chan opened, 1)
	go func() {
		s, err := etcdstore.OpenEmbedded(ctx, client, etcdstore.Config{})
		got <- opened{s, err}
	}()
	time.Sleep(300 * time.Millisecond)
	o, err := etcdstore.OpenEmbedded(ctx, owner, etcdstore.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	c := <-got
	if c.err != nil {
		t.Fatal(c.err)
	}
	if ce, oe := c.s.Client().Endpoints()[0], o.Client().Endpoints()[0]; ce != oe {
		t.Fatalf("client uses %s, owner %s: two servers", ce, oe)
	}
	if err := c.s.Commit(ctx, store.Put("/k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	c.s.Close() // the command ends: the owner's store stays
	if it, err := o.Get(ctx, "/k"); err != nil || string(it.Value) != "v" {
		t.Fatalf("owner after the client closed: %q, %v", it.Value, err)
	}
}
