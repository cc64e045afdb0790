package controller

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/assign"
	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// instance is the controller's view of one instance. Only the elected
// controller writes, so after one load from the store it stays exact as
// long as every write goes through it; any failed write drops it and the
// next use reloads from the store.
type instance struct {
	k      ring.Keys
	config *forwarding.Instance
	dips   map[forwarding.ServerID]*DIP
	ids    map[forwarding.ServerID]idRecord
	w      *ring.Writer
	// defrag is the defragmentation plan in progress, for defragParams.
	defrag       *assign.DefragPlan
	defragParams assign.DefragParams
	// cut are the history entries the plan being published pushed out
	// because of K (history_limit.go).
	cut []historyCut
	// log is the controller's logger With("instance", name).
	log *slog.Logger
}

func (c *Controller) load(ctx context.Context, name string) (*instance, error) {
	if in, ok := c.cache[name]; ok {
		if err := c.verifyCached(ctx, in, false); err != nil {
			return nil, err
		}
		if in, ok := c.cache[name]; ok {
			return in, nil
		}
	}
	k := ring.InstanceKeys(c.root, name)
	cfg, err := ring.ReadInstance(ctx, c.st, k)
	if err != nil {
		return nil, err
	}
	in := &instance{k: k, config: cfg, log: c.log.With("instance", name)}
	if in.dips, err = readDIPs(ctx, c.st, k); err != nil {
		return nil, err
	}
	if in.ids, err = readIDs(ctx, c.st, k); err != nil {
		return nil, err
	}
	if in.w, err = c.openRing(ctx, name, k); err != nil {
		return nil, err
	}
	c.cache[name] = in
	return in, nil
}

// commit writes ops and keeps the cache only if the write succeeded.
func (c *Controller) commit(ctx context.Context, in *instance, ops ...store.Op) error {
	if len(ops) == 0 {
		return nil
	}
	if err := c.st.Commit(ctx, ops...); err != nil {
		c.forget(in)
		return err
	}
	return nil
}

func (c *Controller) forget(in *instance) { delete(c.cache, in.config.Name) }

// Reconcile brings the id records and the mux ring of an instance in line
// with its DIP records, and finishes removals. Each step is idempotent, so
// running it after a crash at any point completes the interrupted
// operation: this is the controller's roll-forward.
func (c *Controller) Reconcile(ctx context.Context, name string) error {
	in, err := c.load(ctx, name)
	if err != nil {
		return err
	}
	if err := c.reconcile(ctx, in); err != nil {
		c.forget(in)
		return fmt.Errorf("reconcile %s: %w", name, err)
	}
	return nil
}

func (c *Controller) reconcile(ctx context.Context, in *instance) error {
	// 1. Paper order for additions: "dips" first, then "id".
	var ops []store.Op
	for id, d := range in.dips {
		if d.State == Removing {
			continue
		}
		if r, ok := in.ids[id]; !ok || r.Addr != d.Addr || r.State != "active" {
			r = idRecord{Addr: d.Addr, State: "active"}
			ops = append(ops, putID(in.k, id, r))
			in.ids[id] = r
		}
	}
	if err := c.commitBatches(ctx, in, ops); err != nil {
		return err
	}
	// 2. The next generation, if anything differs from what is published.
	d, err := c.plan(in)
	if err != nil {
		return err
	}
	if len(d.Servers) > 0 || len(d.Buckets) > 0 || len(d.MCT) > 0 || d.Cheetah != nil {
		if _, err := in.w.Publish(ctx, d); err != nil {
			return err
		}
		c.published(in)
		if err := c.reportCuts(ctx, in, d.Generation); err != nil {
			return err
		}
		if err := c.finish(ctx, in); err != nil {
			return err
		}
	}
	// Servers by health, also without health checks (all up or pending
	// then): the gauge must not depend on --no-health-checks.
	c.metrics.observeHealth(in.config.Name, in.dips)
	// 3. Records that follow the published ring.
	return c.settle(ctx, in)
}

// plan computes the delta taking the published table to the one "dips"
// asks for: servers added or reactivated, buckets reassigned by the
// instance's strategy (Strategy.Moves) with their histories (history.go),
// removed DIPs retired while some history names them, and dropped after.
func (c *Controller) plan(in *instance) (*forwarding.Delta, error) {
	strat, err := strategyOf(in.config)
	if err != nil {
		return nil, err
	}
	t := in.w.Table()
	now := uint32(c.now().Unix())
	d := &forwarding.Delta{Generation: t.Generation + 1}
	var servers []assign.Server
	down := map[forwarding.ServerID]bool{}
	fo := failingOpen(in.dips)
	var owned map[forwarding.ServerID]int
	var anyOwner bool
	if fo.active {
		owned, anyOwner = ownedBuckets(t, in.dips)
	}
	for _, id := range sortedKeys(in.dips) {
		dip := in.dips[id]
		if dip.Down && !fo.active {
			down[id] = true
		}
		if dip.State == Removing {
			continue
		}
		// A strategy may hold a server back from new connections (Cheetah:
		// until its agent has the keys); it is then planned as down.
		held := false
		if g, ok := strat.(ctlstrategy.Gater); ok && !down[id] && g.Held(c.Ctl(strat.Name()), inst{c, in}, t, id) {
			down[id], held = true, true
		}
		want := forwarding.Server{Addr: dip.Addr, State: forwarding.Active}
		if down[id] {
			// Stateful muxes must stop sending it the connections they
			// remember (Beamer chains to a down DIP last, behind running
			// owners): Strategy.DownState.
			want.State = strat.DownState()
		}
		if s, ok := t.Servers[id]; !ok || s != want {
			d.Servers = append(d.Servers, forwarding.ServerChange{ID: id, Server: want})
		}
		w := assignmentWeight(dip, fo, owned, anyOwner)
		if held {
			w = 0
		}
		servers = append(servers, assign.Server{ID: id, Weight: w})
	}
	in.cut = nil
	pl := &ctlstrategy.Planning{Config: in.config, Buckets: t.Buckets, Servers: servers, Down: down, Now: now,
		Histories: func(moves []forwarding.BucketChange) []forwarding.BucketChange {
			return c.histories(in, down, now).Plan(t.Buckets, moves)
		},
		Ctl: c.Ctl(strat.Name()), In: inst{c, in}}
	moves, err := strat.Moves(pl)
	if err != nil {
		return nil, err
	}
	d.MCT = pl.MCT
	// A strategy may have published a generation of its own meanwhile
	// (Prism announces the bins about to move); it changed no server.
	t = in.w.Table()
	d.Generation = t.Generation + 1
	window := uint32(in.config.ChainWindow.Seconds())
	// By server id: still named in some bucket's history. A flat array and
	// moves looked up only for buckets with a history: this loop runs over
	// all B buckets (6.4M at the paper's scale) on every reconcile.
	chaining := make([]bool, 1<<16)
	moved := make(map[uint32]bool, len(moves))
	for _, m := range moves {
		moved[m.Index] = true
		for _, id := range m.Bucket.History[:m.Bucket.History.Len()] {
			chaining[id] = true
		}
	}
	for i, b := range t.Buckets {
		if b.History[0] == forwarding.NoServer || moved[uint32(i)] {
			continue
		}
		for _, id := range b.History[:b.History.Len()] {
			chaining[id] = true
		}
	}
	// A server an MCT entry names keeps its connections there (Prism).
	dropped := map[uint64]bool{}
	for _, m := range d.MCT {
		dropped[m.Sig] = m.Remove
		if !m.Remove {
			chaining[m.Server] = true
		}
	}
	for sig, id := range t.MCT {
		if !dropped[sig] {
			chaining[id] = true
		}
	}
	slices.SortFunc(moves, func(a, b forwarding.BucketChange) int { return int(a.Index) - int(b.Index) })
	d.Buckets = moves
	// Servers without a live DIP: retired while connections may still be
	// daisy-chained to them (some history names them) or still be
	// remembered by muxes for them (strategies that drain removed servers,
	// for the window after their removal), removed after.
	for _, id := range sortedKeys(t.Servers) {
		s := t.Servers[id]
		if dip, ok := in.dips[id]; ok && dip.State != Removing {
			continue
		}
		keep := chaining[id] || (strat.DrainsRemoved() && c.draining(in, id, window, now))
		if h, ok := strat.(ctlstrategy.SlotHolder); ok && !keep {
			keep = h.HoldsSlot(c.Ctl(strat.Name()), inst{c, in}, id)
		}
		switch {
		case keep && s.State != forwarding.Retired:
			s.State = forwarding.Retired
			d.Servers = append(d.Servers, forwarding.ServerChange{ID: id, Server: s})
		case !keep:
			d.Servers = append(d.Servers, forwarding.ServerChange{ID: id, Remove: true})
		}
	}
	if x, ok := strat.(ctlstrategy.ExtraState); ok {
		x.ExtraState(c.Ctl(strat.Name()), inst{c, in}, t, d)
	}
	return d, nil
}

// finish runs the strategy's work after a publication (Finisher) and
// publishes what it asks for.
func (c *Controller) finish(ctx context.Context, in *instance) error {
	strat, err := strategyOf(in.config)
	if err != nil {
		return err
	}
	f, ok := strat.(ctlstrategy.Finisher)
	if !ok {
		return nil
	}
	d, err := f.Finish(ctx, c.Ctl(strat.Name()), inst{c, in})
	if err != nil || d == nil {
		return err
	}
	if _, err := in.w.Publish(ctx, d); err != nil {
		return err
	}
	c.published(in)
	return nil
}

// draining reports whether a removed backend is still within the window
// after its removal, when muxes may still send it the connections they
// remember (the papers' stateful mux drains them so). A down backend does
// not drain.
func (c *Controller) draining(in *instance, id forwarding.ServerID, window, now uint32) bool {
	if dip, ok := in.dips[id]; ok && dip.Down {
		return false
	}
	r, ok := in.ids[id]
	if !ok || r.State != "retired" {
		return true // removed just now: retire it first
	}
	return uint32(r.Since.Unix())+window > now
}

// settle updates the records that trail the published ring: additions
// become active, removals whose server is retired or gone lose their DIP
// record, and id records follow the ring's server table.
func (c *Controller) settle(ctx context.Context, in *instance) error {
	t := in.w.Table()
	var ops []store.Op
	for _, id := range sortedKeys(in.dips) {
		dip := in.dips[id]
		s, inRing := t.Servers[id]
		switch {
		case dip.State == Adding && inRing && s.State == forwarding.Active:
			dip.State = Active
			ops = append(ops, putDIP(dip, in.k))
		case dip.State == Removing && (!inRing || s.State == forwarding.Retired):
			ops = append(ops, store.Delete(dipKey(in.k, id)))
			delete(in.dips, id)
		}
	}
	for _, id := range sortedKeys(in.ids) {
		s, inRing := t.Servers[id]
		_, hasDIP := in.dips[id]
		switch {
		case !inRing && !hasDIP:
			ops = append(ops, store.Delete(idKey(in.k, id)))
			delete(in.ids, id)
		case inRing && s.State == forwarding.Retired && in.ids[id].State != "retired":
			r := idRecord{Addr: s.Addr, State: "retired", Since: c.now().UTC().Truncate(time.Second)}
			ops = append(ops, putID(in.k, id, r))
			in.ids[id] = r
		}
	}
	return c.commitBatches(ctx, in, ops)
}

func sortedKeys[V any](m map[forwarding.ServerID]V) []forwarding.ServerID {
	ids := make([]forwarding.ServerID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
