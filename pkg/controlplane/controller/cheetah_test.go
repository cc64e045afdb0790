package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

func cheetahInstance(buckets uint32) *forwarding.Instance {
	in := webInstance(buckets)
	in.Strategy = forwarding.StrategyCheetah
	in.Cheetah = &forwarding.CheetahOptions{Policy: forwarding.CheetahRR,
		Keys: cookie.Keys{Keys: [2]cookie.Key{{1, 2, 3, 4}, {5, 6, 7, 8}}}}
	return in
}

// A Cheetah instance: its buckets balance as Beamer's (clients without
// timestamps); an id a cookie cannot carry is refused; a removed server's
// slot keeps its address (retired) through the chain window — a cookie may
// still name it — its id cannot be taken by another address meanwhile, and
// the slot is freed after; a down server stays in the table, marked down.
func TestCheetahInstance(t *testing.T) {
	c, root, clk := setupInstance(t, cheetahInstance(64), 1, 1, 1)
	ctx := storetest.Context(t)
	checkInvariants(t, root)

	if err := c.AddDIP(ctx, "web", 40000, dipAddr(40000), 1); err == nil || !strings.Contains(err.Error(), "Cheetah cookie") {
		t.Fatalf("id 40000 accepted or refused for another reason: %v", err)
	}
	if err := c.RemoveDIP(ctx, "web", 1026); err != nil {
		t.Fatal(err)
	}
	tab := checkInvariants(t, root)
	if s, ok := tab.Servers[1026]; !ok || s.State != forwarding.Retired || s.Addr != dipAddr(1026) {
		t.Fatalf("removed server's slot: %+v %v, want retired at its address", s, ok)
	}
	if err := c.AddDIP(ctx, "web", 1026, dipAddr(2000), 1); err == nil {
		t.Fatal("a retired slot was given to another address while cookies may name it")
	}
	clk.advance(forwarding.DefaultChainWindow + time.Minute)
	if err := c.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	tab = checkInvariants(t, root)
	if _, ok := tab.Servers[1026]; ok {
		t.Fatalf("slot 1026 still held %v after the window", tab.Servers[1026])
	}

	in, err := c.instance(ctx, "web")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := strategyOf(in.config)
	if s.DownState() != forwarding.Down {
		t.Fatal("a down Cheetah server must be marked down (no new connections, cookies still reach it)")
	}
	v, err := Show(ctx, shared, root, "web", clk.now())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Details) == 0 || !strings.Contains(v.Details[0], "policy rr") {
		t.Fatalf("ctl show details %q", v.Details)
	}
}

// Instance validation: the policy and a non-zero current key are required.
func TestCheetahOptionsChecked(t *testing.T) {
	for _, mod := range []func(*forwarding.Instance){
		func(in *forwarding.Instance) { in.Cheetah = nil },
		func(in *forwarding.Instance) { in.Cheetah.Policy = "random" },
		func(in *forwarding.Instance) { in.Cheetah.Keys.Keys[0] = cookie.Key{} },
	} {
		in := cheetahInstance(64)
		mod(in)
		if err := CheckInstance(in); err == nil {
			t.Errorf("accepted %+v", in.Cheetah)
		}
	}
	if err := CheckInstance(cheetahInstance(64)); err != nil {
		t.Fatal(err)
	}
}
