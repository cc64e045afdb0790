package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// smallValues is the shared store with a small value limit, so that a
// request of a few hundred DIPs needs parts and the controller's commits
// need several batches, as 32K DIPs do on a real store.
type smallValues struct{ store.Store }

func (smallValues) MaxValueSize() int { return 4 << 10 }

// TestManyDIPsInOneRequest: a ctl request whose DIP list does not fit one
// store value goes in parts and is still one operation — every DIP
// recorded (in more commits than etcd's 128-operation limit allows in
// one), one generation for the whole batch — and leaves nothing under
// the requests; removing them all at once likewise. Parts left without a
// request by a ctl that died are swept once old.
func TestManyDIPsInOneRequest(t *testing.T) {
	root := newRoot()
	st := smallValues{shared}
	ctx := storetest.Context(t)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { Run(rctx, st, root, RunOptions{Identity: "parts", ReconcileEvery: time.Hour}); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	submit := func(r Request) error { return Submit(ctx, st, root, r, 30*time.Second) }
	in := webInstance(4000)
	in.Health = &forwarding.HealthCheck{Kind: forwarding.HealthNone}
	if err := submit(Request{Op: OpCreateInstance, Config: in}); err != nil {
		t.Fatal(err)
	}
	k := ring.InstanceKeys(root, "web")
	gen := func() uint32 {
		it, err := shared.Get(ctx, k.LatestGen())
		if err != nil {
			t.Fatal(err)
		}
		p, err := ring.ParsePointer(it.Value)
		if err != nil {
			t.Fatal(err)
		}
		return p.Generation
	}
	const n = 300 // 600 record operations, ~13 KB of request JSON
	r := Request{Op: OpAddDIP, Instance: "web"}
	var ids []forwarding.ServerID
	for i := range n {
		id := forwarding.ServerID(1025 + i)
		r.DIPs = append(r.DIPs, NewDIP{ID: id, Addr: dipAddr(id), Weight: 1})
		ids = append(ids, id)
	}
	g0 := gen()
	if err := submit(r); err != nil {
		t.Fatalf("add %d DIPs in one request: %v", n, err)
	}
	if g := gen(); g != g0+1 {
		t.Errorf("%d DIPs added in %d generations, want 1", n, g-g0)
	}
	v, err := Show(ctx, shared, root, "web", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.DIPs) != n {
		t.Fatalf("%d DIPs recorded, want %d", len(v.DIPs), n)
	}
	for _, d := range v.DIPs {
		if d.State != Active || d.Buckets == 0 {
			t.Fatalf("DIP %d: %s with %d buckets", d.ID, d.State, d.Buckets)
		}
	}
	checkInvariants(t, root)
	if left, _ := shared.Children(ctx, requestsKey(root)); len(left) != 0 {
		t.Errorf("requests left behind: %v", left)
	}
	g0 = gen()
	if err := submit(Request{Op: OpRemoveDIP, Instance: "web", IDs: ids[:n-1]}); err != nil {
		t.Fatalf("remove %d DIPs in one request: %v", n-1, err)
	}
	if g := gen(); g != g0+1 {
		t.Errorf("%d DIPs removed in %d generations, want 1", n-1, g-g0)
	}
	if tab := checkInvariants(t, root); tab.Servers[ids[n-1]].State != forwarding.Active {
		t.Errorf("the DIP that stays is %v", tab.Servers[ids[n-1]].State)
	}

	// A ctl that died after writing parts but before its request.
	old := fmt.Sprintf("%s/%019d-%08x", requestsKey(root), time.Now().Add(-time.Hour).UnixNano(), 7)
	fresh := fmt.Sprintf("%s/%019d-%08x", requestsKey(root), time.Now().UnixNano(), 8)
	for _, key := range []string{old, fresh} {
		if err := shared.Commit(ctx, store.Put(partKey(key, 0), []byte(`{"ids":[1025]}`))); err != nil {
			t.Fatal(err)
		}
	}
	if err := submit(Request{Op: OpHealthClear, Instance: "web", ID: ids[n-1]}); err != nil {
		t.Fatal(err)
	}
	left, _ := shared.Children(ctx, requestsKey(root))
	if len(left) != 1 || requestsKey(root)+"/"+left[0] != fresh {
		t.Errorf("after a sweep the requests hold %v, want only the fresh orphan", left)
	}
}
