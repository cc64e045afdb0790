package controller

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// fakeKeyAgents stands for the servers' agent APIs: what keys each took, what
// load it reports, which do not answer and which have another server id.
type fakeKeyAgents struct {
	mu     sync.Mutex
	keys   map[netip.Addr]cookie.Keys
	load   map[netip.Addr]uint32
	dead   map[netip.Addr]bool
	realID map[netip.Addr]uint16
}

func newFakeKeyAgents() *fakeKeyAgents {
	return &fakeKeyAgents{keys: map[netip.Addr]cookie.Keys{}, load: map[netip.Addr]uint32{}, dead: map[netip.Addr]bool{}, realID: map[netip.Addr]uint16{}}
}

func (f *fakeKeyAgents) PushCheetah(_ context.Context, agent netip.AddrPort, p agentapi.CheetahPush) (*agentapi.CheetahReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := agent.Addr()
	if f.dead[a] {
		return nil, fmt.Errorf("agent %v: connection refused", agent)
	}
	if id, ok := f.realID[a]; ok && id != p.ID {
		return nil, fmt.Errorf("agent %v: 409 Conflict: keys pushed for server id %d, this agent is server %d", agent, p.ID, id)
	}
	f.keys[a] = p.Keys
	return &agentapi.CheetahReport{VIP: p.VIP, KeyID: p.Keys.Current, Connections: f.load[a]}, nil
}

func (f *fakeKeyAgents) set(fn func(f *fakeKeyAgents)) { f.mu.Lock(); fn(f); f.mu.Unlock() }
func (f *fakeKeyAgents) keysOf(a netip.Addr) cookie.Keys {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keys[a]
}

// The controller pushes the instance's keys to every agent, holds a new
// server back from new connections until its agent confirmed them (an
// agent that cannot be asked, or has another server id, stays held), and
// publishes the agents' loads in the ring for p2c. A rotation writes a new
// key to the spare slot for the muxes at once and makes it current (on the
// agents) only after the settle time; a second rotation is refused while
// one is in progress, before --min-age, and while an active server's agent
// has not confirmed the current keys; a missed push never takes an active
// server out.
func TestCheetahKeyPushLoadsAndRotation(t *testing.T) {
	ctx := storetest.Context(t)
	root, clk := newRoot(), newClock()
	agents := newFakeKeyAgents()
	c := New(shared, root, Options{Now: clk.now, Strategies: map[forwarding.Strategy]any{forwarding.StrategyCheetah: &cheetah.ControllerOptions{Every: time.Second, Client: agents}}})
	cfg := cheetahInstance(64)
	cfg.Cheetah.Policy = forwarding.CheetahP2C
	if err := c.CreateInstance(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	agents.set(func(f *fakeKeyAgents) {
		f.load[dipAddr(1025)], f.load[dipAddr(1026)] = 5, 9
		f.dead[dipAddr(1027)] = true
		f.realID[dipAddr(1028)] = 1099 // misconfigured agent
	})
	for id := forwarding.ServerID(1025); id <= 1028; id++ {
		if err := c.AddDIP(ctx, "web", id, dipAddr(id), 1); err != nil {
			t.Fatal(err)
		}
	}
	table := func() *forwarding.Table {
		t.Helper()
		tab, _, err := ring.NewFollower(shared, ring.InstanceKeys(root, "web"), ring.FollowerOptions{}).Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
	states := func(tab *forwarding.Table) string {
		var b strings.Builder
		for id := forwarding.ServerID(1025); id <= 1028; id++ {
			fmt.Fprintf(&b, "%d:%v ", id, tab.Servers[id].State)
		}
		return b.String()
	}
	if s := states(table()); s != "1025:down 1026:down 1027:down 1028:down " {
		t.Fatalf("before any push: %s, want every server held (down)", s)
	}
	round := func() {
		t.Helper()
		clk.advance(time.Second)
		if err := c.strategyTicks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	round()
	tab := table()
	if s := states(tab); s != "1025:active 1026:active 1027:down 1028:down " {
		t.Fatalf("after one push: %s, want the two confirmed servers active, the unreachable and the misconfigured held", s)
	}
	if tab.Cheetah == nil || tab.Cheetah.Keys != cfg.Cheetah.Keys || tab.Cheetah.Loads[1025] != 5 || tab.Cheetah.Loads[1026] != 9 {
		t.Fatalf("ring's cheetah state %+v, want the instance's keys and loads 5, 9", tab.Cheetah)
	}
	if agents.keysOf(dipAddr(1025)) != cfg.Cheetah.Keys {
		t.Fatal("agent 1025 did not get the instance's keys")
	}
	if v, err := Show(ctx, shared, root, "web", clk.now()); err != nil || !strings.Contains(strings.Join(v.Details, "\n"), "1025:5 1026:9") {
		t.Fatalf("ctl show does not give the loads: %v %q", err, v.Details)
	}
	// The unreachable agent comes; loads change: one more generation.
	agents.set(func(f *fakeKeyAgents) { f.dead[dipAddr(1027)] = false; f.load[dipAddr(1025)] = 40 })
	round()
	tab = table()
	if s := states(tab); s != "1025:active 1026:active 1027:active 1028:down " || tab.Cheetah.Loads[1025] != 40 {
		t.Fatalf("%s loads %v: want 1027 active, 1025's load 40", s, tab.Cheetah.Loads)
	}
	gen := tab.Generation
	round()
	if g := table().Generation; g != gen {
		t.Fatalf("a round with nothing changed published generation %d", g)
	}

	// Rotation.
	rot := ctlstrategy.KeyRotation{Settle: 10 * time.Second, MinAge: time.Hour}
	res, err := c.RotateKey(ctx, "web", rot)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	tab = table()
	in, _ := c.instance(ctx, "web")
	newKey := in.config.Cheetah.Keys.Keys[1]
	if newKey == cfg.Cheetah.Keys.Keys[1] || tab.Cheetah.Keys.Keys[1] != newKey || tab.Cheetah.Keys.Keys[0] != cfg.Cheetah.Keys.Keys[0] || tab.Cheetah.Keys.Current != 0 {
		t.Fatalf("after rotate-key the muxes have %+v: want key 0 kept, a new key 1, key id 0 current", tab.Cheetah.Keys)
	}
	if _, err := c.RotateKey(ctx, "web", rot); err == nil || !strings.Contains(err.Error(), "in progress") {
		t.Fatalf("second rotation during the settle time: %v", err)
	}
	round()
	if k := agents.keysOf(dipAddr(1026)); k.Current != 0 {
		t.Fatalf("agents switched to key id %d before the settle time", k.Current)
	}
	clk.advance(10 * time.Second)
	round()
	want := cookie.Keys{Current: 1, Keys: [2]cookie.Key{cfg.Cheetah.Keys.Keys[0], newKey}}
	for id := forwarding.ServerID(1025); id <= 1027; id++ {
		if k := agents.keysOf(dipAddr(id)); k != want {
			t.Fatalf("agent %d has %+v after the switch, want %+v", id, k, want)
		}
	}
	if tab := table(); tab.Cheetah.Keys != want {
		t.Fatalf("muxes have %+v after the switch", tab.Cheetah.Keys)
	}
	if _, err := c.RotateKey(ctx, "web", rot); err == nil || !strings.Contains(err.Error(), "min-age") {
		t.Fatalf("rotation right after a switch: %v", err)
	}
	// An active server whose agent stops answering stays active, but a
	// rotation is refused while it has not confirmed the current keys.
	agents.set(func(f *fakeKeyAgents) { f.dead[dipAddr(1026)] = true })
	for range 4 {
		round()
	}
	if s := states(table()); !strings.Contains(s, "1026:active") {
		t.Fatalf("a missed push took server 1026 out: %s", s)
	}
	clk.advance(2 * time.Hour)
	round()
	if _, err := c.RotateKey(ctx, "web", rot); err == nil || !strings.Contains(err.Error(), "[1026]") {
		t.Fatalf("rotation with 1026's agent unreachable: %v", err)
	}
	rot.Force = true
	if _, err := c.RotateKey(ctx, "web", rot); err != nil {
		t.Fatalf("forced rotation: %v", err)
	}
	// Without the push (agents keyed by hand), nothing is held.
	c2 := New(shared, root, Options{Now: clk.now})
	if err := c2.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if s := states(table()); s != "1025:active 1026:active 1027:active 1028:active " {
		t.Fatalf("without the push: %s, want every server active", s)
	}
}

// A removed server's slot stays in the table (retired, its id refused to
// another address) past the chain window for as long as its agent reports
// connections: a cookie names the slot however old the connection is. Once
// the agent reports none, the slot is freed.
func TestCheetahSlotHeldWhileConnections(t *testing.T) {
	ctx := storetest.Context(t)
	root, clk := newRoot(), newClock()
	agents := newFakeKeyAgents()
	c := New(shared, root, Options{Now: clk.now, Strategies: map[forwarding.Strategy]any{forwarding.StrategyCheetah: &cheetah.ControllerOptions{Every: time.Second, Client: agents}}})
	if err := c.CreateInstance(ctx, cheetahInstance(64)); err != nil {
		t.Fatal(err)
	}
	agents.set(func(f *fakeKeyAgents) { f.load[dipAddr(1026)] = 3 })
	for id := forwarding.ServerID(1025); id <= 1026; id++ {
		if err := c.AddDIP(ctx, "web", id, dipAddr(id), 1); err != nil {
			t.Fatal(err)
		}
	}
	round := func(d time.Duration) *forwarding.Table {
		t.Helper()
		clk.advance(d)
		if err := c.strategyTicks(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.Reconcile(ctx, "web"); err != nil {
			t.Fatal(err)
		}
		tab, _, err := ring.NewFollower(shared, ring.InstanceKeys(root, "web"), ring.FollowerOptions{}).Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tab
	}
	round(time.Second)
	if err := c.RemoveDIP(ctx, "web", 1026); err != nil {
		t.Fatal(err)
	}
	for range 3 { // past the window, polled all along
		round(forwarding.DefaultChainWindow / 2)
	}
	tab := round(time.Second)
	if s, ok := tab.Servers[1026]; !ok || s.State != forwarding.Retired {
		t.Fatalf("slot 1026 after the window with 3 connections left: %+v %v, want retired", s, ok)
	}
	if err := c.AddDIP(ctx, "web", 1026, dipAddr(2000), 1); err == nil {
		t.Fatal("a held slot was given to another address")
	}
	agents.set(func(f *fakeKeyAgents) { f.load[dipAddr(1026)] = 0 })
	if tab := round(time.Second); tab.Servers[1026] != (forwarding.Server{}) {
		t.Fatalf("slot 1026 still held (%v) after its agent reported no connection", tab.Servers[1026])
	}
}
