package prism

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/strategy/prism/migration"
)

// SignatureLister asks one agent for the Prism signatures of its live
// connections (agentapi.Client; tests give a fake).
type SignatureLister interface {
	Signatures(ctx context.Context, agent netip.AddrPort, vip netip.Addr, buckets uint32) (*agentapi.SignaturesReport, error)
}

// Stats is what the controller did for one Prism instance, for ctl
// show, the metrics and the lab.
type Stats struct {
	Updates   int   `json:"updates"`     // pool updates that moved bins
	Migrated  int   `json:"migrated"`    // signatures copied into the MCT by Algorithm 1
	Late      int   `json:"late"`        // found by the final round after a flip
	Rounds    []int `json:"last_rounds"` // new signatures per round of the last update
	Pruned    int   `json:"pruned"`      // MCT entries removed: no live connection left
	Unreached int   `json:"unreached"`   // agent polls that failed (their bins moved without SCT)
}

// runtime is the controller's Prism state per instance: the SCT (built
// from the agents' answers, rebuilt after a controller restart by asking
// again: servers are the source of truth) and the migration just flipped,
// for the final round.
type runtime struct {
	mu    sync.Mutex
	sct   map[string]*migration.SCT
	stats map[string]*Stats
	// flipped: bins moved by the last publication and their old owners,
	// with the signatures already copied, until the final round ran.
	flipped map[string]*flip
	// keepAlive: what the muxes' keep-alive bits said (keepalive.go).
	keepAlive map[string]*keepAliveState
}

type flip struct {
	bins   map[uint32]forwarding.ServerID
	copied map[uint64]forwarding.ServerID
}

func newRuntime() *runtime {
	return &runtime{sct: map[string]*migration.SCT{}, stats: map[string]*Stats{}, flipped: map[string]*flip{},
		keepAlive: map[string]*keepAliveState{}}
}

// stateOf is the Prism state of controller c (ctlstrategy.StateMaker).
func stateOf(c ctlstrategy.Ctl) *runtime {
	if r, ok := c.State().(*runtime); ok {
		return r
	}
	return newRuntime() // not registered: nothing to remember
}

// StatsOf reports the Prism bookkeeping of an instance in controller c
// (zero for others).
func StatsOf(c ctlstrategy.Ctl, name string) Stats {
	r := stateOf(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.stats[name]; ok {
		out := *s
		out.Rounds = append([]int(nil), s.Rounds...)
		return out
	}
	return Stats{}
}

func (r *runtime) of(in ctlstrategy.Instance) (*migration.SCT, *Stats) {
	name := in.Config().Name
	if r.sct[name] == nil || r.sct[name].Buckets != in.Config().Buckets {
		r.sct[name] = migration.NewSCT(in.Config().Buckets)
		r.stats[name] = &Stats{}
	}
	return r.sct[name], r.stats[name]
}

// poll asks the agents of ids for their signatures (every VIP of the
// instance) and records the answers in the SCT. It returns the servers
// whose agent did not answer.
func pollSignatures(ctx context.Context, c ctlstrategy.Ctl, in ctlstrategy.Instance, sct *migration.SCT, ids map[forwarding.ServerID]bool) map[forwarding.ServerID]error {
	lister := optionsOf(c).Signatures
	cfg := in.Config()
	port := cfg.HealthProbe().AgentPort
	t := in.Table()
	now := c.Now()
	failed := map[forwarding.ServerID]error{}
	type answer struct {
		id   forwarding.ServerID
		sigs map[uint64]uint32
		err  error
	}
	out := make(chan answer, len(ids))
	n := 0
	for id := range ids {
		s, ok := t.Servers[id]
		if !ok {
			continue
		}
		n++
		go func() {
			sigs := map[uint64]uint32{}
			for _, vip := range cfg.VIPs {
				qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				rep, err := lister.Signatures(qctx, netip.AddrPortFrom(s.Addr, port), vip, cfg.Buckets)
				cancel()
				if err != nil {
					out <- answer{id: id, err: err}
					return
				}
				for _, sc := range rep.Sigs {
					sigs[sc.Sig] += sc.Count
				}
			}
			out <- answer{id: id, sigs: sigs}
		}()
	}
	for range n {
		a := <-out
		if a.err != nil {
			failed[a.id] = a.err
			continue
		}
		sct.Report(a.id, a.sigs, now)
	}
	return failed
}

// affected lists, for bins moving away from owners that are up, the SCT's
// signatures of those bins on their (old) owners.
func affected(sct *migration.SCT, bins map[uint32]forwarding.ServerID) map[uint64]forwarding.ServerID {
	out := map[uint64]forwarding.ServerID{}
	byOwner := map[forwarding.ServerID]map[uint32]bool{}
	for b, id := range bins {
		if byOwner[id] == nil {
			byOwner[id] = map[uint32]bool{}
		}
		byOwner[id][b] = true
	}
	for id, set := range byOwner {
		for b := range set {
			for _, sig := range sct.InBucket(id, b) {
				out[sig] = id
			}
		}
	}
	return out
}

// moves is the Prism strategy's generation: prune dead MCT entries,
// choose the bins to move (Algorithm 2), migrate their signatures
// (Algorithm 1) into the same delta as the flip.
func moves(p *ctlstrategy.Planning) ([]forwarding.BucketChange, []forwarding.MCTChange, error) {
	ctx := context.Background()
	c, in := p.Ctl, p.In
	t := in.Table()
	name := in.Config().Name
	opts := in.Config().PrismSettings()
	m := metricsOf(c)
	r := stateOf(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	sct, st := r.of(in)
	now := c.Now()
	var mct []forwarding.MCTChange

	// Which bins move, first by what the SCT knows; then ask the servers
	// giving bins away, and choose again by their fresh answers.
	load := func(owner forwarding.ServerID) map[uint32]float64 { return sct.Load(owner, opts.Lifetime, now) }
	moves := migration.Moves(p.Buckets, p.Servers, load, migration.ByLoad, nil)
	// Givers include servers marked down: a failed health check means dead,
	// or alive and refusing new connections only (its established ones
	// still live). Its agent tells which: one that answers keeps its
	// connections through the MCT like a server leaving gracefully; one
	// that does not is dead, its bins move at once with no entries.
	givers := map[forwarding.ServerID]bool{}
	for _, m := range moves {
		if old := p.Buckets[m.Index].Current; old != forwarding.NoServer {
			givers[old] = true
		}
	}
	// Servers the suspected MCT entries name (with keep-alive bits: idle on
	// every mux for some rounds; without: all): their answers prune dead
	// entries.
	suspect, expired := suspects(c, r, name)
	named := map[forwarding.ServerID]bool{}
	for sig, id := range t.MCT {
		if suspect(sig) {
			named[id] = true
		}
	}
	ask := map[forwarding.ServerID]bool{}
	for id := range givers {
		ask[id] = true
	}
	for _, id := range t.MCT {
		if named[id] || p.Down[id] { // a down server's entries: is it dead?
			ask[id] = true
		}
	}
	failed := pollSignatures(ctx, c, in, sct, ask)
	// alive: up, or down but its agent answered just now.
	alive := func(id forwarding.ServerID) bool {
		_, f := failed[id]
		return !p.Down[id] || (ask[id] && !f)
	}
	st.Unreached += len(failed)
	for id, err := range failed {
		in.Logger().Warn("prism: agent did not list its signatures; its SCT entries are from before", "server", id, "error", err)
	}
	if len(givers) > 0 {
		moves = migration.Moves(p.Buckets, p.Servers, load, migration.ByLoad, nil)
	}

	// Pruning: an entry whose server is gone or down has no live
	// connection; nor has a suspected one whose server's agent, asked just
	// now, answered without that signature; an entry idle past IdleMax
	// goes whatever the server says (the paper's rule, off by default).
	for sig, id := range t.MCT {
		_, inTable := t.Servers[id]
		_, unreached := failed[id]
		reason := ""
		switch {
		case !inTable || !alive(id):
			reason = "server_gone" // removed, or down with no agent answering: dead
		case suspect(sig) && ask[id] && !unreached && sct.Known(id) && !sct.Has(id, sig):
			reason = "closed"
		case expired(sig):
			reason = "idle_max"
		}
		if reason != "" {
			mct = append(mct, forwarding.MCTChange{Sig: sig, Remove: true})
			st.Pruned++
			m.observePruned(name, reason)
		}
	}
	if len(moves) == 0 {
		m.observe(name, mctAfter(t, mct), 0, 0, 0)
		return nil, mct, nil
	}
	// Algorithm 1 over the bins that move away from servers that are alive.
	bins := map[uint32]forwarding.ServerID{}
	var announce []forwarding.BucketChange
	for _, m := range moves {
		if old := p.Buckets[m.Index].Current; old != forwarding.NoServer && alive(old) {
			bins[m.Index] = old
			announce = append(announce, forwarding.BucketChange{Index: m.Index, Bucket: forwarding.Bucket{Current: old, Changed: p.Now}})
		}
	}
	// Announce them first (owner unchanged, Changed set: "migrating"), so
	// every mux remembers the SYNs they forward from then on; wait until
	// the muxes have it; only then read the old owners. A connection whose
	// SYN came earlier is in their socket lists; a later one is remembered
	// by its mux until the final round puts it in the MCT.
	if len(announce) > 0 {
		a := &forwarding.Delta{Generation: t.Generation + 1, Buckets: announce, MCT: mct}
		if err := in.Publish(ctx, a); err != nil {
			return nil, nil, err
		}
		mct = nil
		t = in.Table()
		time.Sleep(opts.Settle)
	}
	owners := map[forwarding.ServerID]bool{}
	for _, id := range bins {
		owners[id] = true
	}
	poll := func() (map[uint64]forwarding.ServerID, error) {
		for id, err := range pollSignatures(ctx, c, in, sct, owners) {
			st.Unreached++
			in.Logger().Warn("prism: agent did not list its signatures during migration", "server", id, "error", err)
		}
		return affected(sct, bins), nil
	}
	got, rounds, err := migration.Migrate(poll, opts.MaxRounds)
	if err != nil {
		return nil, nil, err
	}
	room := int(opts.MCTEntries) - len(t.MCT)
	if len(got) > room {
		in.Logger().Warn("prism: more signatures to migrate than room in the MCT; bins stay where they are", "signatures", len(got), "room", room)
		m.observe(name, mctAfter(t, mct), 0, 0, 0)
		var back []forwarding.BucketChange // no longer migrating
		for _, m := range announce {
			back = append(back, forwarding.BucketChange{Index: m.Index, Bucket: forwarding.Bucket{Current: m.Bucket.Current}})
		}
		return back, mct, nil
	}
	for sig, id := range got {
		if cur, ok := t.MCT[sig]; ok && cur == id {
			continue // already protected (shared entry, §5)
		}
		mct = append(mct, forwarding.MCTChange{Sig: sig, Server: id})
	}
	st.Updates++
	st.Migrated += len(got)
	st.Rounds = st.Rounds[:0]
	for _, rd := range rounds {
		st.Rounds = append(st.Rounds, rd.New)
	}
	r.flipped[name] = &flip{bins: bins, copied: got}
	m.observe(name, mctAfter(t, mct), len(got), 0, len(rounds))
	in.Logger().Info("prism: bins move", "bins", len(moves), "signatures", len(got), "rounds", len(rounds), "round_sizes", st.Rounds)
	return moves, mct, nil
}

// final is Algorithm 1's final round, after the flip is published:
// the signatures of the moved bins that reached their old owners after the
// last round get their MCT entries in the next generation.
func final(ctx context.Context, c ctlstrategy.Ctl, in ctlstrategy.Instance) (*forwarding.Delta, error) {
	name := in.Config().Name
	r := stateOf(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	f := r.flipped[name]
	if f == nil {
		return nil, nil
	}
	delete(r.flipped, name)
	sct, st := r.of(in)
	owners := map[forwarding.ServerID]bool{}
	for _, id := range f.bins {
		owners[id] = true
	}
	late, err := migration.Final(func() (map[uint64]forwarding.ServerID, error) {
		pollSignatures(ctx, c, in, sct, owners)
		return affected(sct, f.bins), nil
	}, f.copied)
	if err != nil || len(late) == 0 {
		return nil, err
	}
	t := in.Table()
	d := &forwarding.Delta{Generation: t.Generation + 1}
	for sig, id := range late {
		if _, ok := t.Servers[id]; ok {
			d.MCT = append(d.MCT, forwarding.MCTChange{Sig: sig, Server: id})
		}
	}
	st.Late += len(d.MCT)
	metricsOf(c).observe(name, mctAfter(t, d.MCT), 0, len(d.MCT), 0)
	in.Logger().Info("prism: final round", "late_signatures", len(d.MCT))
	return d, nil
}

// mctAfter is the MCT's size once changes are applied to t.
func mctAfter(t *forwarding.Table, changes []forwarding.MCTChange) int {
	n := len(t.MCT)
	seen := map[uint64]bool{}
	for sig := range t.MCT {
		seen[sig] = true
	}
	for _, c := range changes {
		switch {
		case c.Remove && seen[c.Sig]:
			n--
			seen[c.Sig] = false
		case !c.Remove && !seen[c.Sig]:
			n++
			seen[c.Sig] = true
		}
	}
	return n
}
