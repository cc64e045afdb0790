package controller

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/strategy/prism"
	"github.com/beamer-lb/beamer/pkg/wire"
)

var prismVIP = netip.MustParseAddr("192.0.2.1")

// prismServers are fake agents listing the signatures of the connections
// each server holds; hook, if set, runs after every answer (SYNs arriving
// while the controller works).
type prismServers struct {
	mu    sync.Mutex
	conns map[netip.Addr]map[wire.Flow]bool
	calls int
	hook  func(call int, server netip.Addr)
	dead  map[netip.Addr]bool // agents that do not answer
}

func (p *prismServers) Signatures(_ context.Context, agent netip.AddrPort, vip netip.Addr, n uint32) (*agentapi.SignaturesReport, error) {
	p.mu.Lock()
	if p.dead[agent.Addr()] {
		p.mu.Unlock()
		return nil, errors.New("connection timed out")
	}
	counts := map[uint64]uint32{}
	for f := range p.conns[agent.Addr()] {
		counts[f.Signature()]++
	}
	p.calls++
	call, hook := p.calls, p.hook
	p.mu.Unlock()
	if hook != nil {
		hook(call, agent.Addr())
	}
	r := &agentapi.SignaturesReport{VIP: vip, Buckets: n}
	for sig, c := range counts {
		r.Sigs = append(r.Sigs, agentapi.SigCount{Sig: sig, Count: c})
		r.Total += c
	}
	return r, nil
}

func (p *prismServers) open(f wire.Flow, server netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[server] == nil {
		p.conns[server] = map[wire.Flow]bool{}
	}
	p.conns[server][f] = true
}

func (p *prismServers) closeAll(server netip.Addr) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, server)
}

func (p *prismServers) each(fn func(f wire.Flow, server netip.Addr)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s, fs := range p.conns {
		for f := range fs {
			fn(f, s)
		}
	}
}

// forward is what every mux does with a packet of f at table t
// (bpf/strategy/prism.h): the MCT entry, else the bin's owner.
func forward(t *forwarding.Table, f wire.Flow) forwarding.ServerID {
	if id, ok := t.MCT[f.Signature()]; ok {
		return id
	}
	return t.Buckets[f.Bucket(uint32(len(t.Buckets)))].Current
}

// muxView follows the ring generation by generation, as a mux does, and
// checks after every single generation that every live connection still
// goes to the server holding it.
type muxView struct {
	t       *testing.T
	table   *forwarding.Table
	servers *prismServers
	gens    int
	resyncs int
	broken  map[wire.Flow]uint32 // first generation that misrouted the flow
}

func (m *muxView) ApplyDelta(d *forwarding.Delta) error {
	if err := m.table.Apply(d); err != nil {
		return err
	}
	m.gens++
	m.check()
	return nil
}

func (m *muxView) Replace(t *forwarding.Table) error {
	m.table = t.Clone()
	m.resyncs++
	m.check()
	return nil
}

func (m *muxView) check() {
	m.servers.each(func(f wire.Flow, server netip.Addr) {
		id := forward(m.table, f)
		if s, ok := m.table.Servers[id]; !ok || s.Addr != server {
			if _, seen := m.broken[f]; !seen {
				m.broken[f] = m.table.Generation
			}
		}
	})
}

// followingStore lets a mux follow every commit of the controller at once,
// so that it applies every generation one by one, as a mux watching the
// ring does, before the writer may garbage-collect a delta.
type followingStore struct {
	store.Store
	mu     sync.Mutex
	follow func()
}

func (s *followingStore) Commit(ctx context.Context, ops ...store.Op) error {
	if err := s.Store.Commit(ctx, ops...); err != nil {
		return err
	}
	s.mu.Lock()
	f := s.follow
	s.mu.Unlock()
	if f != nil {
		f()
	}
	return nil
}

func prismRig(t *testing.T, servers *prismServers, weights ...uint32) (*Controller, *ring.Follower, *muxView) {
	t.Helper()
	return prismRigWith(t, servers, nil, weights...)
}

func prismRigWith(t *testing.T, servers *prismServers, ka *prism.KeepAlive, weights ...uint32) (*Controller, *ring.Follower, *muxView) {
	t.Helper()
	in := webInstance(64)
	in.Strategy = forwarding.StrategyPrism
	in.Prism = &forwarding.PrismOptions{Settle: time.Millisecond}
	root, clk := newRoot(), newClock()
	fs := &followingStore{Store: shared}
	c := New(fs, root, Options{Now: clk.now, Strategies: map[forwarding.Strategy]any{forwarding.StrategyPrism: &prism.ControllerOptions{Signatures: servers, KeepAlive: ka}}})
	ctx := storetest.Context(t)
	if err := c.CreateInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	for i, w := range weights {
		id := forwarding.ServerID(1025 + i)
		if err := c.AddDIP(ctx, "web", id, dipAddr(id), w); err != nil {
			t.Fatal(err)
		}
	}
	f := ring.NewFollower(shared, ring.InstanceKeys(root, "web"), ring.FollowerOptions{OnResync: func(r ring.Resync) { t.Logf("mux resync: %+v", r) }})
	tab, _, err := f.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mux := &muxView{t: t, table: tab, servers: servers, broken: map[wire.Flow]uint32{}}
	fs.mu.Lock()
	fs.follow = func() {
		if _, err := f.CatchUp(ctx, mux); err != nil {
			t.Errorf("follower: %v", err)
		}
	}
	fs.mu.Unlock()
	return c, f, mux
}

// openFlows opens n connections from client port base on, each to the
// server the current table sends its SYN to.
func openFlows(m *muxView, servers *prismServers, base, n int) {
	for i := range n {
		f := wire.Flow{Src: netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), Dst: prismVIP, SrcPort: uint16(base + i), DstPort: 80, Proto: wire.ProtoTCP}
		servers.open(f, m.table.Servers[forward(m.table, f)].Addr)
	}
}

// TestPrismMCTOrdering: through graceful removals, additions and weight
// changes, every generation a mux can see — each one, in order, as every
// mux applies them — forwards every live connection to the server that
// holds it: no bin flips before the MCT entries protecting its connections
// are in the same or an earlier generation. Once the connections end, the
// entries are pruned and the removed server leaves the ring.
func TestPrismMCTOrdering(t *testing.T) {
	servers := &prismServers{conns: map[netip.Addr]map[wire.Flow]bool{}}
	c, fol, mux := prismRig(t, servers, 1, 1, 1, 1)
	ctx := storetest.Context(t)
	openFlows(mux, servers, 10000, 600)
	steps := []struct {
		name string
		op   func() error
	}{
		{"remove 1026", func() error { return c.RemoveDIP(ctx, "web", 1026) }},
		{"add 1029", func() error { return c.AddDIP(ctx, "web", 1029, dipAddr(1029), 1) }},
		{"weight 1025 to 3", func() error { return c.SetWeight(ctx, "web", 1025, 3) }},
	}
	for i, s := range steps {
		if err := s.op(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if _, err := fol.CatchUp(ctx, mux); err != nil {
			t.Fatalf("%s: follower: %v", s.name, err)
		}
		// New connections after each step, on the table as it is now.
		openFlows(mux, servers, 20000+1000*i, 200)
	}
	if len(mux.broken) > 0 {
		for f, g := range mux.broken {
			t.Errorf("connection %v misrouted at generation %d", f, g)
			break
		}
		t.Fatalf("%d connections misrouted in some generation", len(mux.broken))
	}
	st := prism.StatsOf(c.Ctl(forwarding.StrategyPrism), "web")
	if st.Updates < 3 || st.Migrated == 0 || len(mux.table.MCT) == 0 {
		t.Fatalf("no migration happened: %+v, MCT %d", st, len(mux.table.MCT))
	}
	t.Logf("%d generations applied one by one, %d resyncs, stats %+v, MCT %d entries", mux.gens, mux.resyncs, st, len(mux.table.MCT))
	if mux.resyncs > 0 || mux.gens < 6 {
		t.Fatalf("the mux saw %d generations one by one and %d whole tables: the test must see every generation", mux.gens, mux.resyncs)
	}

	// The removed server's connections end: its entries are pruned and it
	// leaves the ring; the others' stay while their connections live.
	servers.closeAll(dipAddr(1026))
	if err := c.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := fol.CatchUp(ctx, mux); err != nil {
		t.Fatal(err)
	}
	for sig, id := range mux.table.MCT {
		if id == 1026 {
			t.Fatalf("MCT entry %#x still names 1026 after its connections ended", sig)
		}
	}
	if err := c.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := fol.CatchUp(ctx, mux); err != nil {
		t.Fatal(err)
	}
	if _, ok := mux.table.Servers[1026]; ok {
		t.Fatalf("server 1026 still in the ring with no connection and no MCT entry")
	}
	for _, id := range []forwarding.ServerID{1025, 1027, 1028, 1029} {
		servers.closeAll(dipAddr(id))
	}
	if err := c.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := fol.CatchUp(ctx, mux); err != nil {
		t.Fatal(err)
	}
	if len(mux.table.MCT) != 0 {
		t.Fatalf("%d MCT entries left with no connection anywhere", len(mux.table.MCT))
	}
}

// TestPrismSYNsDuringMigration is Algorithm 1's race: connections whose
// SYNs reach the old owners while the controller copies signatures (after
// one round's answer, before the flip) are found by the next rounds, which
// go on until a round brings nothing new, and are protected in the flip's
// generation. Without the extra rounds they would break.
func TestPrismSYNsDuringMigration(t *testing.T) {
	servers := &prismServers{conns: map[netip.Addr]map[wire.Flow]bool{}}
	c, fol, mux := prismRig(t, servers, 1, 1, 1, 1)
	ctx := storetest.Context(t)
	openFlows(mux, servers, 10000, 300)
	port := 40000
	var added []wire.Flow
	servers.hook = func(call int, server netip.Addr) {
		if call > 2 {
			return
		}
		// A burst of SYNs right after this answer: one per bin the server
		// owns, to that server (the bins have not flipped yet).
		for b, bk := range mux.table.Buckets {
			if s := mux.table.Servers[bk.Current]; s.Addr != server {
				continue
			}
			for {
				port++
				f := wire.Flow{Src: netip.MustParseAddr("198.18.9.9"), Dst: prismVIP, SrcPort: uint16(port), DstPort: 80, Proto: wire.ProtoTCP}
				if f.Bucket(64) == uint32(b) {
					servers.open(f, server)
					added = append(added, f)
					break
				}
			}
		}
	}
	servers.mu.Lock()
	servers.calls = 0
	servers.mu.Unlock()
	if err := c.RemoveDIP(ctx, "web", 1026); err != nil {
		t.Fatal(err)
	}
	servers.hook = nil
	if _, err := fol.CatchUp(ctx, mux); err != nil {
		t.Fatal(err)
	}
	st := prism.StatsOf(c.Ctl(forwarding.StrategyPrism), "web")
	if len(st.Rounds) < 3 || st.Rounds[1] == 0 || st.Rounds[len(st.Rounds)-1] != 0 {
		t.Fatalf("rounds %v: want the SYNs of the first rounds found by later ones, and a last round with none", st.Rounds)
	}
	if len(added) == 0 {
		t.Fatal("no SYN arrived during the migration: the test tests nothing")
	}
	for f, g := range mux.broken {
		t.Fatalf("connection %v misrouted at generation %d (rounds %v)", f, g, st.Rounds)
	}
	t.Logf("rounds %v, %d SYNs during migration, %d migrated", st.Rounds, len(added), st.Migrated)
}

// The signature the agents report and the one the controller files under a
// bucket agree: SigBucket recovers the flow's bucket.
func TestPrismSignatureBucket(t *testing.T) {
	for i := range 1000 {
		f := wire.Flow{Src: netip.AddrFrom4([4]byte{198, 18, byte(i >> 8), byte(i)}), Dst: prismVIP, SrcPort: uint16(i), DstPort: 80, Proto: wire.ProtoTCP}
		for _, n := range []uint32{7, 64, 1009, 65537} {
			if got, want := wire.SigBucket(f.Signature(), n), f.Bucket(n); got != want {
				t.Fatalf("%v: SigBucket %d, Bucket %d (n %d)", f, got, want, n)
			}
		}
	}
}
