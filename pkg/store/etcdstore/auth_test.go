package etcdstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storeurl"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestPasswordAuth: with etcd's authentication enabled (as an operator does
// with etcdctl user add / auth enable), a store opened with the user and
// password works — commits, watch, election — and one without credentials
// or with a wrong password is refused at Open.
func TestPasswordAuth(t *testing.T) {
	dir := t.TempDir()
	e, err := etcdstore.StartEmbedded(etcdstore.EmbedConfig{Dir: dir, ClientAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{e.Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, step := range []func() error{
		func() error { _, err := admin.UserAdd(ctx, "root", "r00t-pass"); return err },
		func() error { _, err := admin.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := admin.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	open := func(user, pass string) (*etcdstore.Store, error) {
		return etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{e.Endpoint()}, Username: user, Password: pass,
			DialTimeout: 3 * time.Second, LeaseTTL: 2 * time.Second})
	}
	s, err := open("root", "r00t-pass")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Commit(ctx, store.Put("/auth/k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	if it, err := s.Get(ctx, "/auth/k"); err != nil || string(it.Value) != "v" {
		t.Fatalf("read back %q, %v", it.Value, err)
	}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	if _, err := s.Campaign(cctx, "/auth/leader", "me"); err != nil {
		t.Fatalf("election with authentication: %v", err)
	}
	// Through a store URL, the password from the environment: embed://
	// finds the running server through its endpoint file.
	t.Setenv(storeurl.PasswordEnv, "r00t-pass")
	for _, url := range []string{"embed://root@" + dir, "etcd://root@" + strings.TrimPrefix(e.Endpoint(), "http://")} {
		s, _, err := storeurl.Open(ctx, url)
		if err != nil {
			t.Fatalf("%s: %v", url, err)
		}
		it, err := s.Get(ctx, "/auth/k")
		s.Close()
		if err != nil || string(it.Value) != "v" {
			t.Fatalf("%s: read %q, %v", url, it.Value, err)
		}
	}
	for who, pass := range map[string]string{"": "", "root": "wrong"} {
		if s, err := open(who, pass); err == nil {
			s.Close()
			t.Errorf("user %q password %q: opened", who, pass)
		}
	}
}
