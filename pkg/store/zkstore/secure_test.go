package zkstore_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/store/storeurl"
	"github.com/beamer-lb/beamer/pkg/store/zkstore"
)

// TestDigestAuth: what a store authenticated with the digest scheme writes
// is readable and writable by the same user only; a client without
// credentials or with a wrong password can neither read nor change it.
func TestDigestAuth(t *testing.T) {
	srv := storetest.StartZooKeeper(t)
	ctx := storetest.Context(t)
	open := func(user, pass string) *zkstore.Store {
		s, err := zkstore.Open(ctx, zkstore.Config{Servers: []string{srv.Addr}, Username: user, Password: pass, SessionTimeout: 2 * time.Second, DialTimeout: 40 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	owner := open("beamer", "s3cret")
	if err := owner.Commit(ctx, store.Put("/auth/ring/latest-gen", []byte("7"))); err != nil {
		t.Fatal(err)
	}
	if it, err := open("beamer", "s3cret").Get(ctx, "/auth/ring/latest-gen"); err != nil || string(it.Value) != "7" {
		t.Fatalf("same user, new session: %q, %v", it.Value, err)
	}
	for who, s := range map[string]*zkstore.Store{"anonymous": open("", ""), "wrong password": open("beamer", "guess")} {
		if it, err := s.Get(ctx, "/auth/ring/latest-gen"); err == nil {
			t.Errorf("%s read %q", who, it.Value)
		}
		if err := s.Commit(ctx, store.Put("/auth/ring/latest-gen", []byte("1"))); err == nil {
			t.Errorf("%s overwrote the pointer", who)
		}
		if err := s.Commit(ctx, store.Delete("/auth/ring/latest-gen")); err == nil {
			t.Errorf("%s deleted the pointer", who)
		}
	}
	if it, err := owner.Get(ctx, "/auth/ring/latest-gen"); err != nil || string(it.Value) != "7" {
		t.Fatalf("after the intruders: %q, %v", it.Value, err)
	}
}

// TestTLS: over ZooKeeper's secureClientPort, a client with a certificate
// of the CA works (URL ca=, cert=, key=); one without a certificate, with
// another CA's, or in plaintext gets no session.
func TestTLS(t *testing.T) {
	c := storetest.MakeCerts(t, net.ParseIP("127.0.0.1"))
	srv := storetest.StartZooKeeperTLS(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	good := fmt.Sprintf("zk://%s?timeout=40s&ca=%s&cert=%s&key=%s", srv.Addr, c.CA, c.ClientCert, c.ClientKey)
	s, _, err := storeurl.Open(ctx, good)
	if err != nil {
		t.Fatalf("%v\nZooKeeper log:\n%s", err, srv.LogTail())
	}
	defer s.Close()
	if err := s.Commit(ctx, store.Put("/tls/k", []byte("v"))); err != nil {
		t.Fatal(err)
	}
	if it, err := s.Get(ctx, "/tls/k"); err != nil || string(it.Value) != "v" {
		t.Fatalf("read back: %q, %v", it.Value, err)
	}
	for what, url := range map[string]string{
		"no client certificate": fmt.Sprintf("zk://%s?timeout=2s&ca=%s", srv.Addr, c.CA),
		"another CA":            fmt.Sprintf("zk://%s?timeout=2s&ca=%s&cert=%s&key=%s", srv.Addr, c.CA, c.RogueCert, c.RogueKey),
		"plaintext":             fmt.Sprintf("zk://%s?timeout=2s", srv.Addr),
	} {
		if s, _, err := storeurl.Open(ctx, url); err == nil {
			s.Close()
			t.Errorf("%s: got a session", what)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
}
