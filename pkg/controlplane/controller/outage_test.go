package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/etcdstore"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/store/zkstore"
)

// TestCtlAfterStoreOutage is issue 11's row "store down … after it
// returns, the first ctl says no controller is running": the store server
// (an etcd process, a ZooKeeper process) is stopped for longer than the
// controller's lease or session under a live controller and mux, then
// started again; the first ctl request after it completes — the controller
// is elected again within seconds — and the mux follows it.
func TestCtlAfterStoreOutage(t *testing.T) {
	cases := []struct {
		name  string
		start func(t testing.TB) *storetest.Server
		open  func(t *testing.T, addr string) store.Store
	}{
		{"etcd", storetest.StartEtcd, func(t *testing.T, addr string) store.Store {
			s, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{addr}, LeaseTTL: 2 * time.Second, DialTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"zookeeper", storetest.StartZooKeeper, func(t *testing.T, addr string) store.Store {
			s, err := zkstore.Open(context.Background(), zkstore.Config{Servers: []string{addr}, SessionTimeout: 2 * time.Second, DialTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := c.start(t)
			h := newDamageHarness(t, func() store.Store { return c.open(t, srv.Addr) }, 2)
			srv.Stop()
			time.Sleep(4 * time.Second) // past the 2 s lease/session: the leadership is gone
			srv.Start()
			// The operator's ctl runs once the store answers again.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				if _, err := h.st.Get(h.ctx, h.k.Config()); err == nil {
					break
				} else if time.Now().After(deadline) {
					t.Fatalf("store not back 30 s after its restart: %v", err)
				}
			}
			err := Submit(h.ctx, h.st, h.root, Request{Op: OpAddDIP, Instance: "web", ID: 1030, Addr: dipAddr(1030), Weight: 1}, 30*time.Second)
			if err != nil {
				t.Fatalf("first ctl request after the outage: %v\ncontroller log:\n%s", err, h.log())
			}
			tab := h.converged("after the outage")
			if _, ok := tab.Servers[1030]; !ok {
				t.Fatal("the request after the outage is not in the ring")
			}
			if !strings.Contains(h.log(), "no longer leading") {
				t.Logf("controller kept its leadership through the outage; log:\n%s", h.log())
			}
		})
	}
}
