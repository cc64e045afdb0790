package prism

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/strategy/prism/migration"
)

// KeepAlive configures dead-connection pruning from the keep-alive
// bits of the Prism MCT (docs/strategy-prism.md, "Pruning"). Every Every,
// the controller collects from each mux it is told about the MCT entries
// a packet hit through that mux since the last collection (reading clears
// the bits). An entry no mux hit for IdleRounds complete rounds is
// suspected; it goes when its server's agent, asked then, no longer lists
// the connection (the second opinion). A round counts only if every mux
// answered: a mux that cannot be reached never makes a live entry look
// idle. Without this configuration the servers' answers alone decide, at
// every reconcile.
type KeepAlive struct {
	Muxes     []string // mux daemons' --metrics addresses (host:port)
	MuxesFile string   // read again every round: one host:port a line, '#' comments; adds to Muxes
	Every     time.Duration
	// IdleRounds: complete rounds with no hit on any mux before an entry is
	// suspected (default 3).
	IdleRounds int
	// IdleMax, if positive: complete rounds with no hit after which an
	// entry goes even though its server still lists the socket or does not
	// answer — the paper's rule (§3.6: an idle entry is dead), for clients
	// that vanished without a FIN. 0: a socket the server holds keeps its
	// entry however long it is idle.
	IdleMax int
	Timeout time.Duration // per mux (default 2 s)
	// Client collects one mux's bits (nil: HTTP, migration.KeepAliveClient).
	Client KeepAliveCollector
}

// KeepAliveCollector collects (and clears) one mux's keep-alive bits.
type KeepAliveCollector interface {
	KeepAlive(ctx context.Context, addr, instance string) (*migration.KeepAliveReport, error)
}

func (o *KeepAlive) fill() {
	if o.Every <= 0 {
		o.Every = 10 * time.Second
	}
	if o.IdleRounds <= 0 {
		o.IdleRounds = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Client == nil {
		o.Client = &migration.KeepAliveClient{}
	}
}

// Validate checks the options a person gave.
func (o *KeepAlive) Validate() error {
	switch {
	case o.Every < 0 || o.Timeout < 0 || o.IdleRounds < 0 || o.IdleMax < 0:
		return errors.New("prism keep-alive: negative interval, timeout or round count")
	case o.IdleMax > 0 && o.IdleMax < max(o.IdleRounds, 1):
		return fmt.Errorf("prism keep-alive: idle max %d below idle rounds %d", o.IdleMax, o.IdleRounds)
	}
	for _, m := range o.Muxes {
		if err := checkMuxAddr(m); err != nil {
			return fmt.Errorf("prism mux %q: %w", m, err)
		}
	}
	if o.MuxesFile != "" {
		if _, err := readMuxList(o.MuxesFile); err != nil {
			return err
		}
	}
	return nil
}

// checkMuxAddr says why s is not a mux's --metrics address, host:port.
func checkMuxAddr(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port (a mux's --metrics address)")
	}
	if host == "" {
		return errors.New("no host: want host:port (a mux's --metrics address)")
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || p == 0 {
		return fmt.Errorf("port %q: want 1–65535", port)
	}
	return nil
}

// muxes is the list for this round.
func (o *KeepAlive) muxes() ([]string, error) {
	out := append([]string(nil), o.Muxes...)
	if o.MuxesFile != "" {
		more, err := readMuxList(o.MuxesFile)
		if err != nil {
			return nil, err
		}
		out = append(out, more...)
	}
	return out, nil
}

func readMuxList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("prism mux list: %w", err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line, _, _ := strings.Cut(s.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if err := checkMuxAddr(line); err != nil {
			return nil, fmt.Errorf("prism mux list %s line %d: %q: want host:port", path, n, line)
		}
		out = append(out, line)
	}
	return out, s.Err()
}

// keepAliveRound is one collection for one instance.
type keepAliveRound struct {
	instance string
	hits     map[uint64]bool
	muxes    int
	failed   map[string]error // mux address -> why it did not answer
}

// complete: every mux answered (and there was at least one).
func (k *keepAliveRound) complete() bool { return k.muxes > 0 && len(k.failed) == 0 }

// keepAliveState is the controller's memory of the bits of one instance:
// complete rounds each entry went without a hit on any mux.
type keepAliveState struct {
	idle map[uint64]int
}

// keepAlivePoller collects the bits beside the controller's loop (a mux
// that does not answer must not hold up requests or health checks) and
// hands each round to the loop (Host.Do).
type keepAlivePoller struct {
	h ctlstrategy.Host
	o KeepAlive
}

// run collects a round every o.Every until ctx ends or the leadership is
// lost.
func (p *keepAlivePoller) run(ctx context.Context) error {
	t := time.NewTicker(p.o.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		for _, r := range p.round(ctx) {
			err := p.h.Do(ctx, "prism keep-alive round", func(ctx context.Context, c ctlstrategy.Ctl) error { return recordRound(ctx, c, r) })
			if errors.Is(err, store.ErrConflict) || ctx.Err() != nil {
				return err
			}
		}
	}
}

// round collects the bits of every Prism instance from every mux.
func (p *keepAlivePoller) round(ctx context.Context) []keepAliveRound {
	names, err := p.h.Instances(ctx)
	if err != nil {
		p.h.Logger().Error("prism keep-alive: listing instances", "error", err)
		return nil
	}
	muxes, err := p.o.muxes()
	if err != nil {
		p.h.Logger().Warn("prism keep-alive: no mux list; this round counts for nothing", "error", err)
	}
	var out []keepAliveRound
	for _, name := range names {
		cfg, err := ring.ReadInstance(ctx, p.h.Store(), ring.InstanceKeys(p.h.Root(), name))
		if err != nil || cfg.Strategy != forwarding.StrategyPrism {
			continue
		}
		out = append(out, p.collect(ctx, name, muxes))
	}
	return out
}

func (p *keepAlivePoller) collect(ctx context.Context, name string, muxes []string) keepAliveRound {
	r := keepAliveRound{instance: name, hits: map[uint64]bool{}, muxes: len(muxes), failed: map[string]error{}}
	type answer struct {
		mux string
		rep *migration.KeepAliveReport
		err error
	}
	ch := make(chan answer, len(muxes))
	for _, m := range muxes {
		go func() {
			qctx, cancel := context.WithTimeout(ctx, p.o.Timeout)
			defer cancel()
			rep, err := p.o.Client.KeepAlive(qctx, m, name)
			ch <- answer{m, rep, err}
		}()
	}
	for range muxes {
		a := <-ch
		if a.err != nil {
			r.failed[a.mux] = a.err
			continue
		}
		for _, sig := range a.rep.Hit {
			r.hits[sig] = true
		}
	}
	return r
}

// recordRound records one round's bits and, when some entry has
// been idle long enough, reconciles the instance: moves asks the
// servers of the suspects and prunes the dead ones.
func recordRound(ctx context.Context, c ctlstrategy.Ctl, kr keepAliveRound) error {
	o := optionsOf(c).KeepAlive
	if o == nil {
		return nil
	}
	for m, err := range kr.failed {
		c.Logger().Warn("prism keep-alive: mux did not answer; this round counts for no entry", "instance", kr.instance, "mux", m, "error", err)
	}
	if kr.muxes == 0 {
		c.Logger().Warn("prism keep-alive: no mux to collect bits from; this round counts for no entry", "instance", kr.instance)
	}
	in, err := c.Load(ctx, kr.instance)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, ring.ErrNoInstance) {
		return nil
	}
	if err != nil {
		return err
	}
	t := in.Table()
	r := stateOf(c)
	r.mu.Lock()
	ka := r.keepAlive[kr.instance]
	if ka == nil {
		ka = &keepAliveState{idle: map[uint64]int{}}
		r.keepAlive[kr.instance] = ka
	}
	for sig := range ka.idle {
		if _, ok := t.MCT[sig]; !ok {
			delete(ka.idle, sig)
		}
	}
	suspects := 0
	for sig := range t.MCT {
		n, tracked := ka.idle[sig]
		switch {
		case kr.hits[sig] || !tracked:
			// Hit, or new: an entry counts from the round after the one
			// that first saw it published (it may not have been on every
			// mux for the whole of this round).
			n = 0
		case kr.complete():
			n++
		}
		ka.idle[sig] = n
		if n >= o.IdleRounds {
			suspects++
		}
	}
	r.mu.Unlock()
	metricsOf(c).observeKeepAlive(kr.instance, kr.complete(), len(kr.failed), suspects)
	if suspects == 0 {
		return nil
	}
	return c.Reconcile(ctx, kr.instance)
}

// suspects tells moves which entries to check with their
// servers: with keep-alive bits, those idle on every mux for IdleRounds
// rounds (expired: past IdleMax too); without, every entry. r.mu is held.
func suspects(c ctlstrategy.Ctl, r *runtime, name string) (suspect, expired func(uint64) bool) {
	o := optionsOf(c).KeepAlive
	if o == nil {
		return func(uint64) bool { return true }, func(uint64) bool { return false }
	}
	ka := r.keepAlive[name]
	idle := func(sig uint64) int {
		if ka == nil {
			return 0
		}
		return ka.idle[sig]
	}
	return func(sig uint64) bool { return idle(sig) >= o.IdleRounds },
		func(sig uint64) bool { return o.IdleMax > 0 && idle(sig) >= o.IdleMax }
}

// CollectRound collects one round of the named instance's keep-alive bits
// from the muxes now and records it, as the background poller does every
// KeepAlive.Every (tests drive rounds with it). Without KeepAlive it does
// nothing.
func CollectRound(ctx context.Context, c ctlstrategy.Ctl, instance string) error {
	o := optionsOf(c).KeepAlive
	if o == nil {
		return nil
	}
	muxes, err := o.muxes()
	if err != nil {
		c.Logger().Warn("prism keep-alive: no mux list; this round counts for nothing", "error", err)
	}
	p := &keepAlivePoller{o: *o}
	return recordRound(ctx, c, p.collect(ctx, instance, muxes))
}
