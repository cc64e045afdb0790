package controller

import (
	"errors"
	"testing"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestCrashAtEveryStep kills the controller after every possible number of
// store writes during add, remove and re-weight, restarts it (Recover, as
// a newly elected controller does) and checks that the store converged to
// a valid state muxes accept, then that repeating the request — what
// `beamer ctl` does after a lost answer — ends in the requested state.
func TestCrashAtEveryStep(t *testing.T) {
	t.Run("beamer", func(t *testing.T) { crashAtEveryStep(t, webInstance(600)) })
	// Maglev: a removed backend is retired too, draining the connections
	// muxes remember for it, for the window after its removal.
	t.Run("maglev", func(t *testing.T) { crashAtEveryStep(t, maglevInstance(601)) })
}

func crashAtEveryStep(t *testing.T, instance *forwarding.Instance) {
	retiredOrGone := func(tab *forwarding.Table, id forwarding.ServerID) bool {
		s, ok := tab.Servers[id]
		return !ok || s.State == forwarding.Retired
	}
	ops := []struct {
		name  string
		op    func(c *Controller) error
		check func(t *testing.T, tab *forwarding.Table)
	}{
		{"add", func(c *Controller) error {
			return c.AddDIP(storetest.Context(t), "web", 3000, dipAddr(3000), 2)
		}, func(t *testing.T, tab *forwarding.Table) {
			if tab.Servers[3000].State != forwarding.Active {
				t.Fatal("added DIP not active in the ring")
			}
		}},
		{"remove", func(c *Controller) error {
			err := c.RemoveDIP(storetest.Context(t), "web", 1026)
			if errors.Is(err, ErrNotFound) {
				return nil // removed before the crash
			}
			return err
		}, func(t *testing.T, tab *forwarding.Table) {
			if !retiredOrGone(tab, 1026) {
				t.Fatalf("removed DIP still active in the ring: %+v", tab.Servers[1026])
			}
		}},
		{"weight", func(c *Controller) error {
			return c.SetWeight(storetest.Context(t), "web", 1025, 5)
		}, func(t *testing.T, tab *forwarding.Table) {}},
	}
	for _, o := range ops {
		t.Run(o.name, func(t *testing.T) {
			for budget := 0; ; budget++ {
				if budget > 100 {
					t.Fatal("operation never completed")
				}
				in := *instance
				_, root, clk := setupInstance(t, &in, 1, 1, 1)
				crash := storetest.NewCrashing(shared, budget)
				err := o.op(New(crash, root, Options{Now: clk.now}))
				if !crash.Crashed() {
					if err != nil {
						t.Fatal(err)
					}
					o.check(t, checkInvariants(t, root))
					t.Logf("%s completes in %d commits; crashed and recovered at each of them", o.name, budget)
					return
				}
				// Restart: a new controller recovers, muxes must accept the result.
				c := New(shared, root, Options{Now: clk.now})
				if err := c.Recover(storetest.Context(t)); err != nil {
					t.Fatalf("budget %d: recover: %v", budget, err)
				}
				if _, _, err := ring.NewFollower(shared, ring.InstanceKeys(root, "web"), ring.FollowerOptions{}).Load(storetest.Context(t)); err != nil {
					t.Fatalf("budget %d: muxes cannot load after recovery: %v", budget, err)
				}
				checkInvariants(t, root)
				if err := o.op(c); err != nil {
					t.Fatalf("budget %d: repeated request after recovery: %v", budget, err)
				}
				o.check(t, checkInvariants(t, root))
			}
		})
	}
}
