package controller

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// fakeAgents answers connection reports per server address, as agents
// would; a server can be made unreachable.
type fakeAgents struct {
	mu     sync.Mutex
	conns  map[netip.Addr]map[uint32]uint32
	down   map[netip.Addr]bool
	asked  map[netip.Addr]int
	badReq []string
}

func newFakeAgents() *fakeAgents {
	return &fakeAgents{conns: map[netip.Addr]map[uint32]uint32{}, down: map[netip.Addr]bool{}, asked: map[netip.Addr]int{}}
}

func (f *fakeAgents) Connections(_ context.Context, agent netip.AddrPort, vip netip.Addr, n uint32) (*agentapi.ConnectionsReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if agent.Port() != agentapi.DefaultPort || vip != netip.MustParseAddr("192.0.2.1") || n != 300 {
		f.badReq = append(f.badReq, fmt.Sprint(agent, vip, n))
	}
	f.asked[agent.Addr()]++
	if f.down[agent.Addr()] {
		return nil, errors.New("connection refused")
	}
	r := &agentapi.ConnectionsReport{VIP: vip, Buckets: n}
	for b := range uint32(n) {
		if c := f.conns[agent.Addr()][b]; c > 0 {
			r.Counts = append(r.Counts, agentapi.BucketCount{Bucket: b, Count: c})
			r.Total += c
		}
	}
	return r, nil
}

func (f *fakeAgents) set(id forwarding.ServerID, bucket, n uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conns[dipAddr(id)] == nil {
		f.conns[dipAddr(id)] = map[uint32]uint32{}
	}
	f.conns[dipAddr(id)][bucket] = n
}

// holdRig: an instance (window 60 s, 300 buckets, 3 DIPs) whose controller
// polls fake agents for held connections.
func holdRig(t *testing.T, maxHold time.Duration) (*Controller, *holder, *fakeAgents, *clock, string, *logBook) {
	agents := newFakeAgents()
	logs, logger := newLogBook()
	h := newHolder(HoldOptions{Interval: 10 * time.Second, MaxHold: maxHold, Client: agents, Logger: logger})
	root, clk := newRoot(), newClock()
	c := New(shared, root, Options{Now: clk.now, Holds: h.hold})
	h.now = clk.now
	in := webInstance(300)
	in.ChainWindow = time.Minute
	ctx := storetest.Context(t)
	if err := c.CreateInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDIPs(ctx, "web", []NewDIP{{1025, dipAddr(1025), 1}, {1026, dipAddr(1026), 1}, {1027, dipAddr(1027), 1}}); err != nil {
		t.Fatal(err)
	}
	clk.advance(time.Hour)
	if err := c.Reconcile(ctx, "web"); err != nil { // the additions' windows end
		t.Fatal(err)
	}
	return c, h, agents, clk, root, logs
}

// tick advances the clock in 5 s steps for d, running the holder's rounds
// and the periodic reconcile (every 30 s) as the controller loop does, and
// checks at every step that a bucket the old owner still holds
// connections in never leaves the window: agents chain only within
// Changed + window.
func tick(t *testing.T, c *Controller, h *holder, clk *clock, root string, d time.Duration, held map[uint32]forwarding.ServerID) {
	t.Helper()
	ctx := storetest.Context(t)
	for step := time.Duration(0); step < d; step += 5 * time.Second {
		clk.advance(5 * time.Second)
		if err := h.round(ctx, c); err != nil {
			t.Fatal(err)
		}
		if clk.now().Unix()%30 == 0 {
			if err := c.Reconcile(ctx, "web"); err != nil {
				t.Fatal(err)
			}
		}
		tab, err := loadTable(t, root)
		if err != nil {
			t.Fatal(err)
		}
		for b, id := range held {
			bk := tab.Buckets[b]
			if !bk.History.Contains(id) || uint32(clk.now().Unix()) >= bk.Changed+60 {
				t.Fatalf("at +%v: bucket %d is %+v: server %d holds connections there but would not be chained to", step, b, bk, id)
			}
		}
	}
}

// TestHoldWhileConnectionsLive: after a removal, the removed server keeps
// the buckets it still has connections in (re-stamped, in generations that
// batch every due bucket) for as long as its agent reports them — here
// five windows — while its other buckets end at the fixed window; once
// its connections are gone, the hold ends within a window and the server
// leaves the ring.
func TestHoldWhileConnectionsLive(t *testing.T) {
	c, h, agents, clk, root, logs := holdRig(t, 24*time.Hour)
	ctx := storetest.Context(t)
	if err := c.RemoveDIP(ctx, "web", 1026); err != nil {
		t.Fatal(err)
	}
	tab, _ := loadTable(t, root)
	var mine []uint32
	for i, b := range tab.Buckets {
		if b.History.Contains(1026) {
			mine = append(mine, uint32(i))
		}
	}
	held := map[uint32]forwarding.ServerID{mine[0]: 1026, mine[7]: 1026, mine[50]: 1026}
	for b := range held {
		agents.set(1026, b, 3)
	}
	agents.set(1026, 299, 1) // a bucket it does not hold in any history: ignored
	gen := tab.Generation
	tick(t, c, h, clk, root, 5*time.Minute, held)
	tab, _ = loadTable(t, root)
	for _, b := range mine {
		if _, ok := held[b]; !ok && tab.Buckets[b].History.Contains(1026) {
			t.Fatalf("bucket %d without connections still chains to 1026 after 5 windows: %+v", b, tab.Buckets[b])
		}
	}
	if tab.Servers[1026].State != forwarding.Retired {
		t.Fatalf("held server 1026 is %+v, want retired", tab.Servers[1026])
	}
	// Re-stamps come at most once per poll for all held buckets together
	// (plus the windows' end), not once per bucket.
	if n := tab.Generation - gen; n > 5*60/10+2 {
		t.Fatalf("%d generations in 5 minutes for 3 held buckets", n)
	}
	if len(agents.badReq) > 0 {
		t.Fatalf("agents asked with wrong parameters: %v", agents.badReq)
	}
	if len(logs.find("server holds connections in buckets it no longer owns", "server=1026", "buckets=4")) == 0 {
		t.Fatalf("hold not logged: %q", logs.all())
	}
	// Connections close: the hold ends within a window, and 1026 leaves.
	for b := range held {
		agents.set(1026, b, 0)
	}
	tick(t, c, h, clk, root, 2*time.Minute, nil)
	tab, _ = loadTable(t, root)
	if _, ok := tab.Servers[1026]; ok {
		t.Fatalf("1026 still in the ring 2 windows after its last connection: %+v", tab.Servers[1026])
	}
}

// TestHoldFallsBackToWindow: an agent that cannot be asked gets the fixed
// window; one failed poll amid good ones does not end a hold; a hold ends
// at MaxHold, loudly.
func TestHoldFallsBackToWindow(t *testing.T) {
	c, h, agents, clk, root, logs := holdRig(t, 3*time.Minute)
	ctx := storetest.Context(t)
	if err := c.RemoveDIPs(ctx, "web", []forwarding.ServerID{1026}); err != nil {
		t.Fatal(err)
	}
	tab, _ := loadTable(t, root)
	var mine []uint32
	for i, b := range tab.Buckets {
		if b.History.Contains(1026) {
			mine = append(mine, uint32(i))
		}
	}
	agents.set(1026, mine[0], 2)
	held := map[uint32]forwarding.ServerID{mine[0]: 1026}
	tick(t, c, h, clk, root, 90*time.Second, held)
	agents.mu.Lock()
	agents.down[dipAddr(1026)] = true // one failed poll
	agents.mu.Unlock()
	tick(t, c, h, clk, root, 10*time.Second, held)
	agents.mu.Lock()
	agents.down[dipAddr(1026)] = false
	agents.mu.Unlock()
	tick(t, c, h, clk, root, 30*time.Second, held)
	// MaxHold 3 min: the hold began about 30 s after the removal; by
	// 3 min 30 s + a window it must be over.
	tick(t, c, h, clk, root, 3*time.Minute, nil)
	tab, _ = loadTable(t, root)
	if tab.Buckets[mine[0]].History.Contains(1026) {
		t.Fatalf("bucket %d held past MaxHold: %+v", mine[0], tab.Buckets[mine[0]])
	}
	if len(logs.find("after the maximum hold")) == 0 {
		t.Fatalf("end of hold at MaxHold not logged: %q", logs.all())
	}

	// An unreachable agent from the start: the fixed window.
	if err := c.RemoveDIP(ctx, "web", 1027); err != nil {
		t.Fatal(err)
	}
	agents.mu.Lock()
	agents.down[dipAddr(1027)] = true
	agents.mu.Unlock()
	tab, _ = loadTable(t, root)
	b := -1
	for i, bk := range tab.Buckets {
		if bk.History.Contains(1027) {
			b = i
			break
		}
	}
	agents.set(1027, uint32(b), 5)
	tick(t, c, h, clk, root, 2*time.Minute, nil)
	tab, _ = loadTable(t, root)
	if tab.Buckets[b].History.Contains(1027) {
		t.Fatalf("bucket %d kept for a server whose agent cannot be asked: %+v", b, tab.Buckets[b])
	}
	if len(logs.find("cannot ask server for its connections", "server=1027")) == 0 {
		t.Fatalf("unreachable agent not logged: %q", logs.all())
	}
}

// TestHoldSurvivesFailover: a new leader asks the agents before its first
// reconcile, so a held bucket whose re-stamp is overdue (the old leader
// died, the election took a while) is re-stamped, not dropped.
func TestHoldSurvivesFailover(t *testing.T) {
	c, h, agents, clk, root, _ := holdRig(t, 24*time.Hour)
	ctx := storetest.Context(t)
	if err := c.RemoveDIP(ctx, "web", 1026); err != nil {
		t.Fatal(err)
	}
	tab, _ := loadTable(t, root)
	b := -1
	for i, bk := range tab.Buckets {
		if bk.History.Contains(1026) {
			b = i
			break
		}
	}
	agents.set(1026, uint32(b), 1)
	tick(t, c, h, clk, root, 45*time.Second, map[uint32]forwarding.ServerID{uint32(b): 1026})
	tab, _ = loadTable(t, root)
	clk.t.Store(int64(tab.Buckets[b].Changed) + 62) // the old leader is gone past the window
	h2 := newHolder(HoldOptions{Interval: 10 * time.Second, Client: agents})
	c2 := New(shared, root, Options{Now: clk.now, Holds: h2.hold})
	h2.now = clk.now
	if err := h2.prime(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if err := c2.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	tab, _ = loadTable(t, root)
	if bk := tab.Buckets[b]; !bk.History.Contains(1026) || bk.Changed != uint32(clk.now().Unix()) {
		t.Fatalf("after failover, bucket %d is %+v: the held server was dropped", b, bk)
	}
}
