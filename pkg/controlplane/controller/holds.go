package controller

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
)

// Connection holds (issue 10.2): an old owner that still has connections
// in a bucket it lost keeps receiving them, however long they live. Servers
// never write to the store; the controller asks the agents of the servers
// named in bucket histories how many connections they hold per bucket
// (GET /v1/connections), and while a server reports some in a bucket, the
// history maintenance (history.go) keeps it there and re-stamps the
// bucket's Changed before the window runs out. A server whose agent cannot
// be asked gets the fixed window; a hold ends at the latest MaxHold after
// it began.

// ConnectionCounter asks one agent for its connections per bucket
// (agentapi.Client; tests give a fake).
type ConnectionCounter interface {
	Connections(ctx context.Context, agent netip.AddrPort, vip netip.Addr, buckets uint32) (*agentapi.ConnectionsReport, error)
}

// HoldOptions configure connection holds.
type HoldOptions struct {
	// Interval between polls of an instance's previous owners (default
	// 10 s); never more than a quarter of the instance's chaining window,
	// so that a re-stamp lands well before the window ends.
	Interval time.Duration
	// MaxHold bounds how long one server keeps one bucket past the middle
	// of its window (default 24 h).
	MaxHold time.Duration
	// Timeout of one agent request (default 2 s).
	Timeout time.Duration
	// Settle: a server's report counts as "holds nothing in this bucket"
	// (history_limit.go) only if asked at least this long after the
	// bucket's last change (default 5 s): a mux that applies a generation
	// late may still send it new connections of the bucket meanwhile.
	Settle time.Duration
	// Client asks the agents; nil: HTTP to DIP:agent_port.
	Client ConnectionCounter
	// Logger receives holds starting, ending at MaxHold (Error), and
	// agents that cannot be asked (Warn); nil: the controller's.
	Logger *slog.Logger
}

func (o *HoldOptions) fill() {
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.MaxHold <= 0 {
		o.MaxHold = 24 * time.Hour
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Settle <= 0 {
		o.Settle = 5 * time.Second
	}
	if o.Client == nil {
		o.Client = &agentapi.Client{}
	}
	o.Logger = loggerOr(o.Logger)
}

type holdKey struct {
	id     forwarding.ServerID
	bucket uint32
}

// serverReport is the latest answer of one server's agent.
type serverReport struct {
	at       time.Time
	buckets  map[uint32]uint32 // connections per bucket (all VIPs)
	err      error             // the latest poll failed (buckets: from before)
	answered bool              // buckets come from an answer (not only a failed poll)
}

// instanceHolds is what the holder knows about one instance.
type instanceHolds struct {
	lastPoll time.Time
	reports  map[forwarding.ServerID]*serverReport
	since    map[holdKey]time.Time // when a hold began
	expired  map[holdKey]bool      // reached MaxHold: no longer held
}

// holder polls agents and answers the history maintenance's HoldFunc.
type holder struct {
	opts    HoldOptions
	now     func() time.Time
	metrics *Metrics
	mu      sync.Mutex // hold() may run from another goroutine than round()
	inst    map[string]*instanceHolds
}

func newHolder(o HoldOptions) *holder {
	o.fill()
	return &holder{opts: o, now: time.Now, inst: map[string]*instanceHolds{}}
}

// interval is how often one instance is polled.
func (h *holder) interval(cfg *forwarding.Instance) time.Duration {
	return max(time.Second, min(h.opts.Interval, cfg.ChainWindow/4))
}

// hold is the HoldFunc: true while id's agent reported connections in
// bucket recently (within three intervals) and the hold is younger than
// MaxHold.
func (h *holder) hold(instance string, id forwarding.ServerID, bucket uint32) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	ih := h.inst[instance]
	if ih == nil {
		return false
	}
	r := ih.reports[id]
	now := h.now()
	k := holdKey{id, bucket}
	if !h.fresh(r, now) || r.buckets[bucket] == 0 {
		delete(ih.since, k)
		return false
	}
	if ih.expired[k] {
		return false
	}
	s, ok := ih.since[k]
	if !ok {
		ih.since[k] = now
		return true
	}
	if now.Sub(s) >= h.opts.MaxHold {
		ih.expired[k] = true
		h.opts.Logger.Error("server still holds connections after the maximum hold; no longer chained to it, they will break",
			"instance", instance, "bucket", bucket, "server", id, "connections", r.buckets[bucket], "max_hold", h.opts.MaxHold)
		return false
	}
	return true
}

// count is the HoldCountFunc: what the latest fresh answer of id's agent
// says of bucket — n connections (known: there is such an answer), and
// whether it was asked Settle after since (Unix seconds), when id could no
// longer take new connections of the bucket.
func (h *holder) count(instance string, id forwarding.ServerID, bucket uint32, since uint32) (n uint32, settled, known bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ih := h.inst[instance]
	if ih == nil {
		return 0, false, false
	}
	r := ih.reports[id]
	if !h.fresh(r, h.now()) || !r.answered {
		return 0, false, false
	}
	// since is in whole seconds: the change may have come up to 1 s later.
	settled = !r.at.Before(time.Unix(int64(since)+1, 0).Add(h.opts.Settle))
	return r.buckets[bucket], settled, true
}

// fresh: r is recent enough to hold by. A failed poll keeps the last good
// counts for three intervals, so one lost answer does not end a hold.
func (h *holder) fresh(r *serverReport, now time.Time) bool {
	return r != nil && now.Sub(r.at) <= 3*h.opts.Interval+h.opts.Timeout
}

// round polls, for every Beamer instance due, the agents of the servers
// whose history entries reach the middle of their window before the next
// poll, then reconciles the instance if some bucket held by connections is
// due for a re-stamp: one generation re-stamps all of them.
func (h *holder) round(ctx context.Context, c *Controller) error {
	names, err := c.Instances(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := h.instance(ctx, c, name, true); err != nil {
			return err
		}
	}
	return nil
}

// prime polls every instance once before a new leader's first reconcile
// (Recover), which would otherwise end the windows of held buckets whose
// re-stamp the previous leader had not published yet.
func (h *holder) prime(ctx context.Context, c *Controller) error {
	names, err := c.Instances(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := h.instance(ctx, c, name, false); err != nil {
			return err
		}
	}
	return nil
}

// instance polls the agents of one instance if it is due, and reconciles
// it (if reconcile) when a held bucket is due for a re-stamp.
func (h *holder) instance(ctx context.Context, c *Controller, name string, reconcile bool) error {
	in, err := c.instance(ctx, name)
	if err != nil {
		return err
	}
	cfg := in.config
	if !hasHistories(cfg) {
		return nil // no previous owner to hold a bucket for
	}
	now := c.now()
	h.mu.Lock()
	ih := h.inst[name]
	if ih == nil {
		ih = &instanceHolds{reports: map[forwarding.ServerID]*serverReport{}, since: map[holdKey]time.Time{}, expired: map[holdKey]bool{}}
		h.inst[name] = ih
	}
	due := now.Sub(ih.lastPoll) >= h.interval(cfg)
	h.mu.Unlock()
	if !due {
		return nil
	}
	t := in.w.Table()
	window := uint32(cfg.ChainWindow.Seconds())
	soon := uint32(now.Add(h.interval(cfg)).Unix())
	named := map[forwarding.ServerID]bool{} // in some history
	// Polled: servers with an entry reaching half its window before the
	// next poll, and those in full histories (K owners), one of which the
	// bucket's next move pushes out (history_limit.go).
	poll := map[forwarding.ServerID]bool{}
	full := cfg.ChainLen()
	for _, b := range t.Buckets {
		n := b.History.Len()
		for _, id := range b.History[:n] {
			named[id] = true
			if soon >= b.Changed+window/2 || n >= full {
				poll[id] = true
			}
		}
	}
	results := h.ask(ctx, cfg, t, poll)
	h.mu.Lock()
	ih.lastPoll = now
	for id := range ih.reports {
		if !named[id] {
			delete(ih.reports, id)
		}
	}
	for id, r := range results {
		old := ih.reports[id]
		if r.err != nil {
			if old == nil || old.err == nil {
				h.opts.Logger.Warn("cannot ask server for its connections (fixed chaining window for it)", "instance", name, "server", id, "error", r.err)
			}
			if old != nil {
				old.err = r.err // keep the last good counts until they are stale
				continue
			}
		} else if old == nil || len(old.buckets) == 0 && len(r.buckets) > 0 {
			if len(r.buckets) > 0 {
				h.opts.Logger.Info("server holds connections in buckets it no longer owns; chaining to it while they last",
					"instance", name, "server", id, "buckets", len(r.buckets), "max_hold", h.opts.MaxHold)
			}
		}
		ih.reports[id] = r
	}
	for k := range ih.since {
		if !named[k.id] {
			delete(ih.since, k)
		}
	}
	for k := range ih.expired {
		if !named[k.id] || !t.Buckets[k.bucket].History.Contains(k.id) {
			delete(ih.expired, k)
		}
	}
	// Reasons, per bucket past half its window, why it is kept: an old
	// owner holds connections there (re-stamped), or an old owner's agent
	// cannot be asked (fixed window), or a hold reached MaxHold.
	reasons := map[string]int{"connections": 0, "agent_unreachable": 0, "max_hold": 0}
	restamp := false
	for i, b := range t.Buckets {
		if b.History.Len() == 0 || uint32(now.Unix()) < b.Changed+window/2 {
			continue
		}
		var held, unreachable, expired bool
		for _, id := range b.History[:b.History.Len()] {
			k := holdKey{id, uint32(i)}
			r := ih.reports[id]
			switch {
			case ih.expired[k]:
				expired = true
			case h.fresh(r, now) && r.buckets[uint32(i)] > 0:
				held = true
			case r != nil && r.err != nil:
				unreachable = true
			}
		}
		switch {
		case held:
			reasons["connections"]++
			restamp = true
		case unreachable:
			reasons["agent_unreachable"]++
		case expired:
			reasons["max_hold"]++
		}
	}
	h.mu.Unlock()
	c.metrics.observeHeld(name, reasons)
	if restamp && reconcile {
		return c.Reconcile(ctx, name)
	}
	return nil
}

// ask polls the agents of ids in parallel (bounded), each for every VIP of
// the instance, and merges the counts of the VIPs.
func (h *holder) ask(ctx context.Context, cfg *forwarding.Instance, t *forwarding.Table, ids map[forwarding.ServerID]bool) map[forwarding.ServerID]*serverReport {
	out := make(map[forwarding.ServerID]*serverReport, len(ids))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	port := cfg.HealthProbe().AgentPort
	at := h.now()
	for id := range ids {
		s, ok := t.Servers[id]
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := &serverReport{at: at, buckets: map[uint32]uint32{}, answered: true}
			for _, vip := range cfg.VIPs {
				qctx, cancel := context.WithTimeout(ctx, h.opts.Timeout)
				rep, err := h.opts.Client.Connections(qctx, netip.AddrPortFrom(s.Addr, port), vip, cfg.Buckets)
				cancel()
				if err != nil {
					r.err = fmt.Errorf("server %d (%v): %w", id, s.Addr, err)
					r.answered = false
					break
				}
				for _, bc := range rep.Counts {
					r.buckets[bc.Bucket] += bc.Count
				}
			}
			mu.Lock()
			out[id] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
