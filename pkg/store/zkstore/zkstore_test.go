package zkstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/store/zkstore"
)

func TestConformance(t *testing.T) {
	srv := storetest.StartZooKeeper(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := zkstore.Open(context.Background(), zkstore.Config{
			Servers:        []string{srv.Addr},
			SessionTimeout: 2 * time.Second,
			// The ZooKeeper JVM can take well over 10 s to serve its first
			// session while the lab tests load both cores (seen in CI runs).
			DialTimeout: 40 * time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOpenUnreachable(t *testing.T) {
	_, err := zkstore.Open(context.Background(), zkstore.Config{Servers: []string{storetest.FreeAddr(t)}, DialTimeout: time.Second})
	if err == nil {
		t.Fatal("Open of an address nobody listens on succeeded")
	}
	t.Log(err)
}
