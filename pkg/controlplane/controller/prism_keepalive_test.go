package controller

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
	"github.com/beamer-lb/beamer/pkg/strategy/prism"
	"github.com/beamer-lb/beamer/pkg/strategy/prism/migration"
	"github.com/beamer-lb/beamer/pkg/wire"
)

// fakeMuxes answer keep-alive collections: each listed mux reports the
// flows marked busy as hit (as if every busy flow went through each mux);
// a mux in down does not answer.
type fakeMuxes struct {
	mu   sync.Mutex
	busy map[wire.Flow]bool
	down map[string]bool
}

func (m *fakeMuxes) KeepAlive(_ context.Context, addr, instance string) (*migration.KeepAliveReport, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down[addr] {
		return nil, errors.New("connection refused")
	}
	r := &migration.KeepAliveReport{Instance: instance}
	for f := range m.busy {
		r.Hit = append(r.Hit, f.Signature())
	}
	return r, nil
}

// TestPrismKeepAlivePruning: MCT entries are pruned from the muxes' keep-
// alive bits with the servers' socket lists as the second opinion. A
// migrated connection that is busy, or idle while its server still holds
// its socket, keeps its entry; one that went idle and then closed loses
// it after the idle rounds; a round in which a mux does not answer counts
// for no entry, so a mux that cannot be reached never gets a live entry
// pruned (nor, here, a dead one); an entry idle past IdleMax goes even
// though its socket lingers (the paper's rule for vanished clients).
func TestPrismKeepAlivePruning(t *testing.T) {
	servers := &prismServers{conns: map[netip.Addr]map[wire.Flow]bool{}}
	muxes := &fakeMuxes{busy: map[wire.Flow]bool{}, down: map[string]bool{}}
	ka := &prism.KeepAlive{Muxes: []string{"mux1:9100", "mux2:9100"}, IdleRounds: 2, IdleMax: 8, Client: muxes}
	c, fol, mux := prismRigWith(t, servers, ka, 1, 1)
	ctx := storetest.Context(t)
	openFlows(mux, servers, 10000, 200)
	if err := c.RemoveDIP(ctx, "web", 1026); err != nil {
		t.Fatal(err)
	}
	if _, err := fol.CatchUp(ctx, mux); err != nil {
		t.Fatal(err)
	}
	// The migrated connections: busy, idle but open, idle then closed.
	var busy, idle, dead []wire.Flow
	servers.each(func(f wire.Flow, s netip.Addr) {
		if s != dipAddr(1026) {
			return
		}
		if _, ok := mux.table.MCT[f.Signature()]; !ok {
			t.Fatalf("connection %v of the removed server has no MCT entry", f)
		}
		switch len(busy) + len(idle) + len(dead) {
		case 0, 3, 6, 9:
			busy = append(busy, f)
		case 1, 4, 7, 10:
			idle = append(idle, f)
		default:
			dead = append(dead, f)
		}
	})
	if len(busy) == 0 || len(idle) == 0 || len(dead) == 0 {
		t.Fatalf("too few migrated connections: %d busy, %d idle, %d dead", len(busy), len(idle), len(dead))
	}
	for _, f := range busy {
		muxes.busy[f] = true
	}
	servers.mu.Lock()
	for _, f := range dead {
		delete(servers.conns[dipAddr(1026)], f)
	}
	servers.mu.Unlock()
	round := func() {
		t.Helper()
		if err := prism.CollectRound(ctx, c.Ctl(forwarding.StrategyPrism), "web"); err != nil {
			t.Fatal(err)
		}
		if _, err := fol.CatchUp(ctx, mux); err != nil {
			t.Fatal(err)
		}
	}
	has := func(fs []wire.Flow) int {
		n := 0
		for _, f := range fs {
			if _, ok := mux.table.MCT[f.Signature()]; ok {
				n++
			}
		}
		return n
	}

	// A mux that cannot be reached: nothing is pruned however long it lasts,
	// and the servers are not asked (no entry is suspected).
	muxes.down["mux2:9100"] = true
	servers.mu.Lock()
	calls := servers.calls
	servers.mu.Unlock()
	for range 6 {
		round()
	}
	if has(busy) != len(busy) || has(idle) != len(idle) || has(dead) != len(dead) {
		t.Fatalf("with a mux unreachable: busy %d/%d, idle %d/%d, dead %d/%d entries left: a round with a silent mux pruned",
			has(busy), len(busy), has(idle), len(idle), has(dead), len(dead))
	}
	servers.mu.Lock()
	if servers.calls != calls {
		t.Errorf("agents asked %d times while no entry was suspected", servers.calls-calls)
	}
	servers.mu.Unlock()

	// Every mux answers: the dead entries go after the idle rounds (and not
	// before), the busy and the idle-but-open ones stay.
	muxes.down = map[string]bool{}
	round()
	round() // idle 2: suspected, their server asked
	if has(dead) != 0 {
		t.Fatalf("%d of %d dead entries left after %d idle rounds", has(dead), len(dead), ka.IdleRounds)
	}
	if has(busy) != len(busy) || has(idle) != len(idle) {
		t.Fatalf("live entries pruned: busy %d/%d, idle-but-open %d/%d", has(busy), len(busy), has(idle), len(idle))
	}
	st := prism.StatsOf(c.Ctl(forwarding.StrategyPrism), "web")
	if st.Pruned != len(dead) {
		t.Fatalf("pruned %d, want the %d dead", st.Pruned, len(dead))
	}

	// A busy connection's server no longer lists it (its socket closed while
	// packets still come, e.g. a retransmitted FIN): kept while the bits say
	// busy, pruned once idle.
	gone := busy[0]
	servers.mu.Lock()
	delete(servers.conns[dipAddr(1026)], gone)
	servers.mu.Unlock()
	round()
	if _, ok := mux.table.MCT[gone.Signature()]; !ok {
		t.Fatal("an entry hit in this round was pruned on the server's word alone")
	}
	delete(muxes.busy, gone)
	round()
	round()
	if _, ok := mux.table.MCT[gone.Signature()]; ok {
		t.Fatal("an entry idle for the idle rounds, its socket closed, was kept")
	}

	// IdleMax: the idle connections whose sockets the server still holds go
	// once idle for IdleMax rounds; the busy ones stay.
	for range ka.IdleMax {
		round()
	}
	if has(idle) != 0 || has(busy) != len(busy)-1 {
		t.Fatalf("after IdleMax rounds: idle %d/%d left (want 0), busy %d/%d (want all)", has(idle), len(idle), has(busy), len(busy)-1)
	}
	for f, g := range mux.broken {
		if muxes.busy[f] {
			t.Fatalf("busy connection %v misrouted at generation %d", f, g)
		}
	}
	t.Logf("%d busy, %d idle-open, %d dead migrated connections; stats %+v", len(busy), len(idle), len(dead), prism.StatsOf(c.Ctl(forwarding.StrategyPrism), "web"))
}

// TestPrismDownServerAlive: a server marked down by its health checks but
// still running (its service refuses new connections; its agent answers)
// keeps its established connections: they are migrated into the MCT before
// its bins move, as for a graceful removal, and their entries are not
// pruned while it stays down. Once its agent stops answering (the server
// died) its entries go.
func TestPrismDownServerAlive(t *testing.T) {
	servers := &prismServers{conns: map[netip.Addr]map[wire.Flow]bool{}}
	c, fol, mux := prismRig(t, servers, 1, 1, 1)
	ctx := storetest.Context(t)
	openFlows(mux, servers, 10000, 300)
	if err := c.SetHealth(ctx, "web", 1026, false); err != nil {
		t.Fatal(err)
	}
	if _, err := fol.CatchUp(ctx, mux); err != nil {
		t.Fatal(err)
	}
	for f, g := range mux.broken {
		t.Fatalf("connection %v misrouted at generation %d when its server went down alive", f, g)
	}
	n := 0
	for _, id := range mux.table.MCT {
		if id == 1026 {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no MCT entry for the down server's connections")
	}
	for range 3 {
		if err := c.Reconcile(ctx, "web"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := fol.CatchUp(ctx, mux); err != nil {
		t.Fatal(err)
	}
	if len(mux.broken) > 0 {
		t.Fatalf("%d connections misrouted by reconciles while the server stays down", len(mux.broken))
	}
	// The server dies: its agent no longer answers, its entries go.
	servers.mu.Lock()
	servers.dead = map[netip.Addr]bool{dipAddr(1026): true}
	servers.mu.Unlock()
	if err := c.Reconcile(ctx, "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := fol.CatchUp(ctx, mux); err != nil {
		t.Fatal(err)
	}
	for _, id := range mux.table.MCT {
		if id == 1026 {
			t.Fatal("MCT entries of a down server whose agent is gone were kept")
		}
	}
	t.Logf("%d connections of the down server kept through the MCT", n)
}
