package ring

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
)

// Applier is the mux data plane as the Follower sees it. Calls come from
// one goroutine, in generation order.
type Applier interface {
	// ApplyDelta applies d, the generation right after the last one
	// applied. d has been checked against that table (forwarding.Table.Check)
	// so it applies in full; the Applier owns d.
	ApplyDelta(d *forwarding.Delta) error
	// Replace installs a whole table (verified with Validate): after the
	// follower fell behind a garbage-collected generation, skipped a corrupt
	// delta by way of a newer blob, moved to a new incarnation, or after an
	// Applier error left the data plane in an unknown state. The Applier
	// owns t.
	Replace(t *forwarding.Table) error
}

// Resync describes a whole-table load after start.
type Resync struct {
	From, To Pair
	// Declared: the blob loaded is the resync blob that began To's
	// incarnation (otherwise a later blob of that incarnation).
	Declared bool
	Why      string
}

// FollowerOptions tune a Follower; zero values take the defaults.
type FollowerOptions struct {
	// Poll: re-read latest-gen this often even without a watch
	// notification, in case a notification was lost (default 10 s).
	Poll time.Duration
	// RoundTimeout bounds one catch-up round (default 60 s).
	RoundTimeout time.Duration
	// Backoff after a failed round grows from MinBackoff to MaxBackoff
	// (defaults 200 ms and 10 s).
	MinBackoff, MaxBackoff time.Duration
	// OnError, if set, is called with every failed round's error (store
	// unreachable, corrupt object, instance deleted, Applier failure). The
	// last good state stays in force in all these cases.
	OnError func(error)
	// OnRefuse, if set, is called once for each store pair lower than the
	// pair the follower runs (a store restored from an older backup, a
	// rollback): the follower keeps its state and waits for a newer pair.
	OnRefuse func(running, store Pair)
	// OnResync, if set, is called after every whole-table load after start.
	OnResync func(Resync)
	// Now is the clock an incarnation is checked against (default
	// time.Now): one more than FollowerIncarnationLead ahead of it is not
	// loaded (ErrIncarnationAhead, an error of the round).
	Now func() time.Time
}

// Status is a Follower's progress, for metrics and status output.
type Status struct {
	Incarnation uint32    // incarnation of the table applied
	Generation  uint32    // last generation applied
	Updated     time.Time // when it was applied
	Errors      uint64    // failed rounds so far
	LastError   error     // error of the last failed round, nil after a good one
	Resyncs     uint64    // full-table replacements after start
	Refused     uint64    // lower store pairs refused (each counted once)
}

// Follower keeps a mux's forwarding state in step with an instance's mux
// ring. It only reads the store.
type Follower struct {
	st   store.Store
	k    Keys
	opts FollowerOptions

	table       *forwarding.Table // the follower's model of what the Applier holds
	loaded      *forwarding.Table // what Load returned, whose copy table is
	needReplace bool
	refused     Pair // the last lower pair refused, reported once
	lim         limits
	limOK       bool

	mu     sync.Mutex
	status Status
}

// NewFollower returns a Follower of the instance whose keys are k.
func NewFollower(st store.Store, k Keys, opts FollowerOptions) *Follower {
	if opts.Poll == 0 {
		opts.Poll = 10 * time.Second
	}
	if opts.RoundTimeout == 0 {
		opts.RoundTimeout = 60 * time.Second
	}
	if opts.MinBackoff == 0 {
		opts.MinBackoff = 200 * time.Millisecond
	}
	if opts.MaxBackoff == 0 {
		opts.MaxBackoff = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Follower{st: st, k: k, opts: opts}
}

// Load performs a cold start: the latest blob, then the deltas after it in
// order. The returned table is the caller's.
func (f *Follower) Load(ctx context.Context) (*forwarding.Table, LoadStats, error) {
	t, _, s, err := load(ctx, f.st, f.k)
	if errors.Is(err, store.ErrNotFound) {
		if _, cerr := f.st.Get(ctx, f.k.Config()); errors.Is(cerr, store.ErrNotFound) {
			err = fmt.Errorf("%w: %s", ErrNoInstance, f.k.Instance)
		}
	}
	if err == nil {
		err = f.checkAhead(Pair{t.Incarnation, t.Generation})
	}
	if err == nil {
		f.table, f.loaded = t.Clone(), t
	}
	return t, s, err
}

// RoundStats describes one catch-up round.
type RoundStats struct {
	Deltas   int           // deltas applied
	Buckets  int           // bucket changes in them
	Bytes    int           // stored bytes read
	Duration time.Duration // read, verify and apply
}

// CatchUp runs one round of what Run does on every notification: it brings
// the Applier from the follower's current table (set by Load or Run) to
// latest-gen. Run is the normal way; CatchUp is for callers that drive the
// follower themselves (tools, benchmarks). Not concurrently with Run.
func (f *Follower) CatchUp(ctx context.Context, a Applier) (RoundStats, error) {
	if f.table == nil {
		return RoundStats{}, errors.New("ring: CatchUp before Load")
	}
	var rs RoundStats
	start := time.Now()
	f.loaded = nil // the model may move past what Load returned
	err := f.round(ctx, a, &rs)
	rs.Duration = time.Since(start)
	return rs, err
}

// Run follows the ring from t (the table the Applier holds, normally the
// result of Load) until ctx ends, and returns ctx's error. It never gives
// up on store errors: it reports them, keeps the last good state, retries
// with backoff and catches up when the store is back.
func (f *Follower) Run(ctx context.Context, t *forwarding.Table, a Applier) error {
	if t != f.loaded || f.table == nil {
		f.table = t.Clone()
	} // else the copy Load made is the model already (a 6.4M-bucket table is 128 MB)
	f.loaded = nil
	f.setStatus(func(s *Status) { s.Incarnation, s.Generation, s.Updated = t.Incarnation, t.Generation, time.Now() })
	notify := f.st.Watch(ctx, f.k.LatestGen())
	poll := time.NewTicker(f.opts.Poll)
	defer poll.Stop()
	pause := store.NewBackoff(f.opts.MinBackoff, f.opts.MaxBackoff)
	for {
		rctx, cancel := context.WithTimeout(ctx, f.opts.RoundTimeout)
		err := f.round(rctx, a, &RoundStats{})
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			f.setStatus(func(s *Status) { s.Errors++; s.LastError = err })
			if f.opts.OnError != nil {
				f.opts.OnError(err)
			}
			if !pause.Sleep(ctx) {
				return ctx.Err()
			}
			continue
		}
		pause.Reset()
		f.setStatus(func(s *Status) { s.LastError = nil })
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-notify:
			if !ok {
				notify = nil // store closed: polling keeps reporting
			}
		case <-poll.C:
		}
	}
}

// Status returns a snapshot of the follower's progress.
func (f *Follower) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *Follower) setStatus(change func(*Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.status)
}

func (f *Follower) pair() Pair { return Pair{f.table.Incarnation, f.table.Generation} }

// limits are read once per table loaded whole: the bucket count of an
// instance never changes, but a deleted and re-created one may differ.
func (f *Follower) limits(ctx context.Context) (limits, error) {
	if !f.limOK {
		lim, err := ringLimits(ctx, f.st, f.k)
		if err != nil {
			return lim, err
		}
		f.lim, f.limOK = lim, true
	}
	return f.lim, nil
}

// checkAhead refuses a pair whose incarnation leads this mux's clock by
// more than FollowerIncarnationLead: loaded, it would make the mux refuse
// every later publication of the controller as a rollback
// (docs/control-plane.md, "Incarnation rules"). It is an error, not a
// refusal: the mux is behind the store until the controller repairs it.
func (f *Follower) checkAhead(p Pair) error {
	now := f.opts.Now()
	if incarnationTrusted(p.Incarnation, now, FollowerIncarnationLead) {
		return nil
	}
	return fmt.Errorf("%w: %s names %v, incarnation %d s ahead of this mux's clock (bound %v): not loaded (damage the controller repairs, or this host's clock is wrong)",
		ErrIncarnationAhead, f.k.Instance, p, int64(p.Incarnation)-unixClock(now), FollowerIncarnationLead)
}

// refuse keeps the current state when the store names a lower pair, and
// reports each such pair once.
func (f *Follower) refuse(store Pair) {
	if store == f.refused {
		return
	}
	f.refused = store
	f.setStatus(func(s *Status) { s.Refused++ })
	if f.opts.OnRefuse != nil {
		f.opts.OnRefuse(f.pair(), store)
	}
}

// round brings the Applier up to latest-gen.
func (f *Follower) round(ctx context.Context, a Applier, rs *RoundStats) error {
	if f.needReplace {
		// The data plane's state is unknown after a failed apply. Install
		// the newest table the store has, not the one that failed: a newer
		// generation may be what makes it install.
		return f.resync(ctx, a, "the data plane failed to apply the previous table")
	}
	p, err := readPointers(ctx, f.st, f.k)
	if errors.Is(err, store.ErrNotFound) {
		if _, cerr := f.st.Get(ctx, f.k.Config()); errors.Is(cerr, store.ErrNotFound) {
			return fmt.Errorf("ring: %s: %w (keeping %v)", f.k.Instance, ErrNoInstance, f.pair())
		}
		return fmt.Errorf("ring: %s: a generation pointer is missing (damaged ring; the controller repairs it), keeping %v: %w", f.k.Instance, f.pair(), err)
	}
	if err != nil {
		return fmt.Errorf("ring: %s: keeping %v: %w", f.k.Instance, f.pair(), err)
	}
	cur := f.pair()
	switch {
	case p.gen == cur:
		f.refused = Pair{}
		return nil
	case p.gen.Less(cur):
		f.refuse(p.gen)
		return nil
	}
	f.refused = Pair{}
	if err := f.checkAhead(p.gen); err != nil {
		return fmt.Errorf("ring: keeping %v: %w", cur, err)
	}
	if p.gen.Incarnation != cur.Incarnation {
		// Never by deltas: a new incarnation is loaded whole.
		return f.resync(ctx, a, "new incarnation")
	}
	lim, err := f.limits(ctx)
	if err != nil {
		return err
	}
	for g := cur.Generation + 1; g <= p.gen.Generation && g != 0; g++ {
		d, n, err := readDelta(ctx, f.st, f.k, Pair{cur.Incarnation, g}, lim)
		if err == nil {
			if cerr := f.table.Check(d); cerr != nil {
				err = fmt.Errorf("%w: delta of generation %d does not apply to %d: %v", ErrCorrupt, g, f.table.Generation, cerr)
			}
		}
		switch {
		case errors.Is(err, store.ErrNotFound):
			return f.resync(ctx, a, fmt.Sprintf("delta %d was garbage-collected", g))
		case errors.Is(err, ErrCorrupt) && p.blob.Generation >= g:
			// A newer blob covers the bad delta.
			if rerr := f.resync(ctx, a, fmt.Sprintf("corrupt delta %d is covered by blob %v", g, p.blob)); rerr != nil {
				return errors.Join(err, rerr)
			}
			return err // still report the corrupt delta
		case err != nil:
			return err
		}
		if err := a.ApplyDelta(d); err != nil {
			f.needReplace = true
			return fmt.Errorf("ring: data plane failed to apply generation %d: %w", g, err)
		}
		f.table.ApplyChecked(d) // Check passed above
		rs.Deltas++
		rs.Buckets += len(d.Buckets)
		rs.Bytes += n
		f.setStatus(func(s *Status) { s.Generation, s.Updated = g, time.Now() })
	}
	return nil
}

// resync replaces the Applier's table with a fresh cold start, unless the
// store went back meanwhile.
func (f *Follower) resync(ctx context.Context, a Applier, why string) error {
	f.limOK = false
	t, _, s, err := load(ctx, f.st, f.k)
	if err != nil {
		return err
	}
	from, to := f.pair(), Pair{t.Incarnation, t.Generation}
	if err := f.checkAhead(to); err != nil {
		if f.needReplace {
			// The data plane's state is unknown: install again the
			// newest table this follower had.
			return errors.Join(err, f.replace(a, f.table))
		}
		return fmt.Errorf("ring: keeping %v: %w", from, err)
	}
	if to.Less(from) {
		f.refuse(to)
		if !f.needReplace {
			return nil
		}
		// Never go back, not even from an unknown data plane state:
		// install again the newest table this follower had.
		return f.replace(a, f.table)
	}
	if err := f.replace(a, t); err != nil {
		return err
	}
	if f.opts.OnResync != nil {
		f.opts.OnResync(Resync{From: from, To: to, Declared: s.Resync, Why: why})
	}
	return nil
}

func (f *Follower) replace(a Applier, t *forwarding.Table) error {
	if err := a.Replace(t.Clone()); err != nil {
		f.needReplace = true
		f.table = t
		return fmt.Errorf("ring: data plane failed to install generation %d: %w", t.Generation, err)
	}
	f.needReplace = false
	f.table = t
	f.setStatus(func(s *Status) {
		s.Incarnation, s.Generation, s.Updated = t.Incarnation, t.Generation, time.Now()
		s.Resyncs++
	})
	return nil
}
