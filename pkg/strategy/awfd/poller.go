package awfd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/httpserver"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/strategy/awfd/classes"
)

// AWFD (issue 14, Spotlight): the controller polls the agent of every
// active server of an AWFD instance for its available capacity
// (GET /v1/capacity) every poll interval, quantises the capacities into m
// classes and writes the class record (pkg/strategy/awfd/classes) to one key beside the
// instance's ring, which every mux watches. Servers never write the store.
//
// Missed polls: a server whose agent does not answer keeps its last value
// for the instance's hold, then decays (classes.Tracker). Lost updates: the
// record is written whole each time it changes, so a mux that missed
// writes reads the newest one at its next watch event; until then it
// dispatches by the last record it has, which is still a valid record.

// pollOptions configure the capacity poller; the agents' client, the
// clock, the logger and the metrics are the controller's (Host).
type pollOptions struct {
	// Refresh is how often instance configurations and DIPs are re-read
	// (default 1 s).
	Refresh time.Duration
	// Heartbeat rewrites an unchanged record this often so that ctl show
	// and the muxes' age metric see the poller alive (default 5 s).
	Heartbeat time.Duration
}

func (o *pollOptions) fill() {
	if o.Refresh <= 0 {
		o.Refresh = time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 5 * time.Second
	}
}

// poller polls the capacity of the servers of every AWFD instance.
type poller struct {
	h       ctlstrategy.Host
	st      store.Store // fenced by the leadership
	root    string
	o       pollOptions
	metrics *metrics // nil: none
	mu      sync.Mutex
	inst    map[string]*awfdInstance
	// names lists the instances, re-read every Refresh: a deployment
	// without AWFD instances costs one listing a second, not 20.
	names  []string
	listed time.Time
	lines  *httpserver.LineLimiter // failed rounds, once per interval
}

type awfdInstance struct {
	cfg      *forwarding.Instance
	servers  []awfdServer // active, eligible servers, by id
	read     time.Time    // when cfg and servers were read
	tracker  *classes.Tracker
	lastPoll time.Time
	last     *classes.Record // latest written
	written  time.Time
	failures map[forwarding.ServerID]string // latest poll error per server
}

type awfdServer struct {
	id    forwarding.ServerID
	agent netip.AddrPort
}

// newPoller polls the AWFD instances under the host's root, writing
// through its store (the leadership's fenced store).
func newPoller(h ctlstrategy.Host, o pollOptions) *poller {
	o.fill()
	m, _ := h.Metrics().(*metrics)
	return &poller{h: h, st: h.Store(), root: h.Root(), o: o, metrics: m, inst: map[string]*awfdInstance{},
		lines: httpserver.NewLineLimiter(10 * time.Second)}
}

// Run polls until ctx ends; it returns the first store conflict (the
// leadership is gone) or ctx's error.
func (p *poller) Run(ctx context.Context) error {
	t := time.NewTicker(forwarding.MinAWFDPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := p.Round(ctx); err != nil {
			if errors.Is(err, store.ErrConflict) {
				return err
			}
			// A round runs every few hundred milliseconds: a lasting
			// failure is reported once per interval, with a count.
			p.lines.Log(p.h.Logger(), slog.LevelError, "round", "awfd: capacity round failed", "error", err)
		}
	}
}

// Round polls every AWFD instance that is due, and writes its record when
// the classes changed (or the heartbeat is due).
func (p *poller) Round(ctx context.Context) error {
	if now := p.h.Now(); p.listed.IsZero() || now.Sub(p.listed) >= p.o.Refresh {
		names, err := p.h.Instances(ctx)
		if err != nil {
			return err
		}
		p.names, p.listed = names, now
		p.mu.Lock()
		for name := range p.inst {
			if !slices.Contains(names, name) {
				delete(p.inst, name) // deleted: a re-created instance starts afresh
			}
		}
		p.mu.Unlock()
	}
	var errs []error
	for _, name := range p.names {
		if err := p.instance(ctx, name); err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func (p *poller) instance(ctx context.Context, name string) error {
	now := p.h.Now()
	p.mu.Lock()
	ai := p.inst[name]
	p.mu.Unlock()
	k := ring.InstanceKeys(p.root, name)
	if ai == nil || now.Sub(ai.read) >= p.o.Refresh {
		fresh, err := p.load(ctx, k, ai)
		if err != nil || fresh == nil {
			return err
		}
		fresh.read = now
		ai = fresh
		p.mu.Lock()
		p.inst[name] = ai
		p.mu.Unlock()
	}
	if ai.cfg.Strategy != forwarding.StrategyAWFD {
		return nil
	}
	o := ai.cfg.AWFDConfig()
	if now.Sub(ai.lastPoll) < o.Poll {
		return nil
	}
	ai.lastPoll = now
	p.poll(ctx, ai, o)
	ids := make([]forwarding.ServerID, len(ai.servers))
	avail := make([]float64, len(ai.servers))
	for i, s := range ai.servers {
		ids[i] = s.id
		avail[i], _, _ = ai.tracker.Available(s.id, now)
	}
	seq := uint64(now.UnixMilli())
	if ai.last != nil && seq <= ai.last.Seq {
		seq = ai.last.Seq + 1
	}
	rec, err := classes.Build(seq, now.UnixMilli(), o.Classes, ids, classes.Weights(avail, o.Classes))
	if err != nil {
		return err
	}
	if ai.last != nil && sameClasses(ai.last, rec) && now.Sub(ai.written) < p.o.Heartbeat {
		return nil
	}
	b, err := rec.Encode()
	if err != nil {
		return err
	}
	if err := p.st.Commit(ctx, store.Put(classes.Key(k), b)); err != nil {
		return err
	}
	ai.last, ai.written = rec, now
	p.metrics.written(ai.cfg.Name, rec)
	return nil
}

func sameClasses(a, b *classes.Record) bool {
	return slices.EqualFunc(a.Classes, b.Classes, slices.Equal) && slices.Equal(a.Idle, b.Idle)
}

// load reads an instance's configuration and eligible servers, keeping
// what old knew (tracker, last record); on a new poller the stored record
// gives the sequence to continue from.
func (p *poller) load(ctx context.Context, k ring.Keys, old *awfdInstance) (*awfdInstance, error) {
	it, err := p.st.Get(ctx, k.Config())
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // being created or deleted
	}
	if err != nil {
		return nil, err
	}
	var cfg forwarding.Instance
	if err := json.Unmarshal(it.Value, &cfg); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	ai := &awfdInstance{cfg: &cfg, failures: map[forwarding.ServerID]string{}}
	if old != nil {
		ai.tracker, ai.last, ai.written, ai.lastPoll, ai.failures = old.tracker, old.last, old.written, old.lastPoll, old.failures
	}
	if cfg.Strategy != forwarding.StrategyAWFD {
		return ai, nil
	}
	o := cfg.AWFDConfig()
	if ai.tracker == nil {
		ai.tracker = classes.NewTracker(o.Hold, o.Poll)
	}
	ai.tracker.Hold, ai.tracker.HalfLife = o.Hold, o.Poll
	if ai.last == nil {
		if rec, err := classes.Read(ctx, p.st, k); err == nil && rec != nil {
			ai.last = rec
		} else if err != nil {
			p.h.Logger().Warn("awfd: stored record unreadable, writing a new one", "instance", cfg.Name, "error", err)
		}
	}
	dips, err := p.h.Servers(ctx, k)
	if err != nil {
		return nil, err
	}
	port := cfg.HealthProbe().AgentPort
	for id, d := range dips {
		if d.Active && d.EffectiveWeight > 0 {
			ai.servers = append(ai.servers, awfdServer{id: id, agent: netip.AddrPortFrom(d.Addr, port)})
		}
	}
	slices.SortFunc(ai.servers, func(a, b awfdServer) int { return int(a.id) - int(b.id) })
	if len(ai.servers) > classes.MaxServers {
		return nil, fmt.Errorf("%d active servers, AWFD records hold at most %d", len(ai.servers), classes.MaxServers)
	}
	ai.tracker.Forget(func(id forwarding.ServerID) bool { _, ok := dips[id]; return ok })
	return ai, nil
}

// poll asks every server's agent in parallel, within 80% of the interval.
func (p *poller) poll(ctx context.Context, ai *awfdInstance, o forwarding.AWFDOptions) {
	ctx, cancel := context.WithTimeout(ctx, o.Poll*4/5)
	defer cancel()
	type answer struct {
		id  forwarding.ServerID
		rep *agentapi.CapacityReport
		err error
		at  time.Time
	}
	answers := make(chan answer, len(ai.servers))
	for _, s := range ai.servers {
		go func() {
			rep, err := p.h.Agents().Capacity(ctx, s.agent)
			answers <- answer{s.id, rep, err, p.h.Now()}
		}()
	}
	for range ai.servers {
		a := <-answers
		if a.err != nil {
			p.metrics.failed(ai.cfg.Name)
			if ai.failures[a.id] == "" {
				p.h.Logger().Warn("awfd: capacity poll failed; last value kept, then decays", "instance", ai.cfg.Name, "server", a.id,
					"hold", o.Hold, "error", a.err)
			}
			ai.failures[a.id] = a.err.Error()
			continue
		}
		delete(ai.failures, a.id)
		ai.tracker.Report(a.id, a.rep.Available, a.at)
	}
}
