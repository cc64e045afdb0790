package controller

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

	"github.com/beamer-lb/beamer/pkg/controlplane/ring"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/store"
	"github.com/beamer-lb/beamer/pkg/strategy/cheetah/cookie"
)

// Cheetah's keys and loads (docs/strategy-cheetah.md, "Keys and rotation",
// "Power of two choices"). The instance record holds the keys: it is the
// source of truth, and each generation carries them to the muxes
// (forwarding.CheetahState). Servers never read the store: every round the
// controller pushes the keys to the agent of every server of the instance
// (PUT /v1/cheetah on the agent API it already polls), and the agent
// answers with the server's load, its live connections to the VIP, which
// the next generation publishes for the p2c policy. A server becomes active
// (gets new connections) only once its agent confirmed the current keys:
// before, its replies would carry no cookie.

// CheetahPusher pushes keys to one agent (agentapi.Client; tests give a
// fake).
type CheetahPusher interface {
	PushCheetah(ctx context.Context, agent netip.AddrPort, p agentapi.CheetahPush) (*agentapi.CheetahReport, error)
}

// CheetahOptions turn on the key push and load collection.
type CheetahOptions struct {
	// Every is how often each Cheetah instance's agents are pushed the keys
	// and asked their load, and so how often new loads are published at
	// most (default 2 s).
	Every time.Duration
	// Timeout of one push (default 1 s).
	Timeout time.Duration
	// Client pushes; nil: HTTP to DIP:agent_port.
	Client CheetahPusher
	// Logger receives pushes failing (Warn) and working again (Info),
	// never the keys; nil: the controller's.
	Logger *slog.Logger
}

func (o *CheetahOptions) fill() {
	if o.Every <= 0 {
		o.Every = 2 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Client == nil {
		o.Client = &agentapi.Client{}
	}
	o.Logger = loggerOr(o.Logger)
}

// cheetahServer is what the controller knows of one server's agent.
type cheetahServer struct {
	addr  netip.Addr
	keys  cookie.Keys // the keys it last confirmed
	at    time.Time   // when
	load  uint32
	err   error // the last push failed
	known bool  // a load was reported once
}

type cheetahInstanceState struct {
	last    time.Time
	servers map[forwarding.ServerID]*cheetahServer
}

type cheetahRuntime struct {
	mu   sync.Mutex
	inst map[string]*cheetahInstanceState
	// names: the instances last listed, at listed (the round's goroutine
	// only).
	names  []string
	listed time.Time
}

func (c *Controller) cheetahState() *cheetahRuntime {
	if c.cheetah == nil {
		c.cheetah = &cheetahRuntime{inst: map[string]*cheetahInstanceState{}}
	}
	return c.cheetah
}

// confirmed: the agent of id at addr confirmed keys within three rounds.
func (c *Controller) confirmed(name string, id forwarding.ServerID, addr netip.Addr, keys cookie.Keys) bool {
	r := c.cheetahState()
	r.mu.Lock()
	defer r.mu.Unlock()
	ci := r.inst[name]
	if ci == nil {
		return false
	}
	s := ci.servers[id]
	return s != nil && s.addr == addr && s.keys == keys && c.now().Sub(s.at) <= 3*c.opts.Cheetah.Every
}

// held: with the push on, a server that is not active yet gets no new
// connection before its agent confirmed the current keys.
func (cheetahStrategy) held(c *Controller, in *instance, t *forwarding.Table, id forwarding.ServerID) bool {
	if c.opts.Cheetah == nil {
		return false // keys configured by hand on the agents
	}
	if s, ok := t.Servers[id]; ok && s.State == forwarding.Active {
		return false // serving already: a missed push must not take it out
	}
	dip := in.dips[id]
	return !c.confirmed(in.config.Name, id, dip.Addr, in.config.Cheetah.Keys)
}

// holdsSlot keeps a removed server's slot (retired, its id refused to
// any other address) while its agent reports live connections to the
// instance's VIPs: their cookies name the slot, however old they are. An
// agent that stops answering holds it for three more rounds, then the
// chain window alone decides (docs/strategy-cheetah.md, "Server table
// slots").
func (cheetahStrategy) holdsSlot(c *Controller, in *instance, id forwarding.ServerID) bool {
	if c.opts.Cheetah == nil {
		return false
	}
	r := c.cheetahState()
	r.mu.Lock()
	defer r.mu.Unlock()
	ci := r.inst[in.config.Name]
	if ci == nil {
		return false
	}
	s := ci.servers[id]
	return s != nil && s.known && s.load > 0 && c.now().Sub(s.at) <= 3*c.opts.Cheetah.Every
}

// extraState adds the keys of the instance record and, for p2c, the loads
// of the active servers, when they differ from what t carries.
func (cheetahStrategy) extraState(c *Controller, in *instance, t *forwarding.Table, d *forwarding.Delta) {
	o := in.config.Cheetah
	if o == nil {
		return
	}
	want := &forwarding.CheetahState{Keys: o.Keys}
	if o.Policy == forwarding.CheetahP2C {
		active := func(id forwarding.ServerID) bool {
			for _, ch := range d.Servers {
				if ch.ID == id {
					return !ch.Remove && ch.Server.State == forwarding.Active
				}
			}
			s, ok := t.Servers[id]
			return ok && s.State == forwarding.Active
		}
		r := c.cheetahState()
		r.mu.Lock()
		if ci := r.inst[in.config.Name]; ci != nil {
			for id, s := range ci.servers {
				if s.known && s.load > 0 && active(id) {
					if want.Loads == nil {
						want.Loads = map[forwarding.ServerID]uint32{}
					}
					want.Loads[id] = s.load
				}
			}
		}
		r.mu.Unlock()
	}
	if !want.Equal(t.Cheetah) {
		d.Cheetah = want
	}
}

// cheetahRound makes due key switches and, with the push on, pushes the
// keys to every agent of every Cheetah instance whose interval passed,
// then publishes what changed (keys, loads, servers now confirmed).
func (c *Controller) cheetahRound(ctx context.Context) error {
	// The store is listed every 10 s only (a listing reads every key of
	// every instance); an instance this controller just worked on is in
	// its cache meanwhile.
	r := c.cheetahState()
	now := c.now()
	if r.names == nil || now.Sub(r.listed) >= 10*time.Second || now.Before(r.listed) {
		names, err := c.Instances(ctx)
		if err != nil {
			return err
		}
		r.names, r.listed = names, now
	}
	names := slices.Clone(r.names)
	for n := range c.cache {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var errs []error
	for _, n := range names {
		if err := c.cheetahInstanceRound(ctx, n); err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) cheetahInstanceRound(ctx context.Context, name string) error {
	in, err := c.load(ctx, name)
	if errors.Is(err, ring.ErrNoInstance) {
		return nil // deleted since the listing
	}
	if err != nil || !strategyHas[cookieKeeper](in.config) || in.config.Cheetah == nil {
		return err
	}
	now := c.now()
	switched := false
	if o := in.config.Cheetah; !o.SwitchAt.IsZero() && !now.Before(o.SwitchAt) {
		if err := c.switchKey(ctx, in, now); err != nil {
			return err
		}
		switched = true
	}
	changed := false
	if c.opts.Cheetah != nil {
		r := c.cheetahState()
		r.mu.Lock()
		ci := r.inst[name]
		if ci == nil {
			ci = &cheetahInstanceState{servers: map[forwarding.ServerID]*cheetahServer{}}
			r.inst[name] = ci
		}
		due := switched || now.Sub(ci.last) >= c.opts.Cheetah.Every
		if due {
			ci.last = now
		}
		r.mu.Unlock()
		if due {
			changed = c.pushKeys(ctx, in, ci)
		}
	}
	if switched || changed {
		return c.Reconcile(ctx, name)
	}
	return nil
}

// pushKeys pushes the instance's keys to the agent of every server it has
// (in the pool, or retired with connections left), in parallel, and
// records the answers. It reports whether anything the next generation
// depends on changed: a load (p2c), or a server held back now confirmed.
func (c *Controller) pushKeys(ctx context.Context, in *instance, ci *cheetahInstanceState) bool {
	o := c.opts.Cheetah
	cfg := in.config
	port := cfg.HealthProbe().AgentPort
	targets := map[forwarding.ServerID]netip.Addr{}
	for id, s := range in.w.Table().Servers {
		targets[id] = s.Addr
	}
	for id, d := range in.dips {
		targets[id] = d.Addr
	}
	type answer struct {
		id   forwarding.ServerID
		addr netip.Addr
		load uint32
		err  error
	}
	answers := make(chan answer, len(targets))
	var wg sync.WaitGroup
	for id, addr := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var total uint32
			var err error
			for _, vip := range cfg.VIPs {
				pctx, cancel := context.WithTimeout(ctx, o.Timeout)
				rep, perr := o.Client.PushCheetah(pctx, netip.AddrPortFrom(addr, port), agentapi.CheetahPush{VIP: vip, ID: uint16(id), Keys: cfg.Cheetah.Keys})
				cancel()
				if perr != nil {
					err = perr
					break
				}
				total += rep.Connections
			}
			answers <- answer{id, addr, total, err}
		}()
	}
	wg.Wait()
	close(answers)
	r := c.cheetahState()
	r.mu.Lock()
	defer r.mu.Unlock()
	now := c.now()
	t := in.w.Table()
	changed := false
	for a := range answers {
		s := ci.servers[a.id]
		if s == nil || s.addr != a.addr {
			s = &cheetahServer{addr: a.addr}
			ci.servers[a.id] = s
		}
		if a.err != nil {
			if s.err == nil {
				o.Logger.Warn("cheetah: keys not pushed to the server's agent", "instance", cfg.Name, "server", a.id, "dip", a.addr, "error", a.err)
			}
			s.err = a.err
			continue
		}
		if s.err != nil {
			o.Logger.Info("cheetah: keys pushed to the server's agent again", "instance", cfg.Name, "server", a.id, "dip", a.addr)
		}
		if ts, ok := t.Servers[a.id]; !ok || ts.State != forwarding.Active {
			if d := in.dips[a.id]; d != nil && d.EffectiveWeight() > 0 && s.keys != cfg.Cheetah.Keys {
				changed = true // held back until now
			}
		}
		if cfg.Cheetah.Policy == forwarding.CheetahP2C && (!s.known || s.load != a.load) {
			changed = true
		}
		if ts, ok := t.Servers[a.id]; ok && ts.State == forwarding.Retired && s.load > 0 && a.load == 0 {
			changed = true // its last connection closed: the slot may go
		}
		s.keys, s.at, s.load, s.known, s.err = cfg.Cheetah.Keys, now, a.load, true, nil
	}
	for id := range ci.servers {
		if _, ok := targets[id]; !ok {
			delete(ci.servers, id)
		}
	}
	return changed
}

// writeConfig stores the instance record as in.config now says.
func (c *Controller) writeConfig(ctx context.Context, in *instance) error {
	b, err := json.Marshal(in.config)
	if err != nil {
		return err
	}
	return c.commit(ctx, in, store.Put(in.k.Config(), b))
}

// switchKey makes the key slot a rotation filled current.
func (c *Controller) switchKey(ctx context.Context, in *instance, now time.Time) error {
	o := *in.config.Cheetah
	o.Keys.Current ^= 1
	o.SwitchAt, o.Switched = time.Time{}, now.UTC().Truncate(time.Second)
	cfg := *in.config
	cfg.Cheetah = &o
	old := in.config
	in.config = &cfg
	if err := c.writeConfig(ctx, in); err != nil {
		in.config = old
		return err
	}
	c.log.Info("cheetah: key id is current for new connections", "instance", cfg.Name, "key_id", o.Keys.Current)
	return nil
}

// CheetahRotation is what `ctl cheetah rotate-key` asks.
type CheetahRotation struct {
	// Settle is how long muxes get to load the new key before servers use
	// it: longer than a mux may lag without being withdrawn from BGP
	// (muxd's WithdrawBehindAfter, 30 s by default).
	Settle time.Duration `json:"settle"`
	// MinAge refuses a rotation when the current key became current less
	// than MinAge ago: the rotation overwrites the other slot, whose key
	// the connections opened before that switch still carry.
	MinAge time.Duration `json:"min_age"`
	// Force skips MinAge and the check that every active server's agent
	// confirmed the current keys.
	Force bool `json:"force,omitempty"`
}

// DefaultCheetahSettle is Settle's default: muxd withdraws a mux that lags
// more than 30 s behind the store, so every mux still announcing the VIP
// has the new key by then.
const DefaultCheetahSettle = 40 * time.Second

// RotateCheetahKey starts a key rotation: a new random key goes into the
// slot new connections do not use, the muxes get it in the next
// generation, and Settle later the controller makes it current (the round,
// cheetahRound), pushing the switch to the agents. Connections keep the key
// id they started with, so nothing breaks as long as no connection is older
// than the switch before this one (MinAge).
func (c *Controller) RotateCheetahKey(ctx context.Context, name string, rot CheetahRotation) (string, error) {
	in, err := c.instance(ctx, name)
	if err != nil {
		return "", err
	}
	if !strategyHas[cookieKeeper](in.config) || in.config.Cheetah == nil {
		return "", badf("instance %q uses strategy %s, not cheetah", name, in.config.Strategy)
	}
	if rot.Settle < 0 || rot.MinAge < 0 {
		return "", badf("settle and min-age must not be negative")
	}
	o := *in.config.Cheetah
	now := c.now()
	if !o.SwitchAt.IsZero() {
		return "", badf("a rotation is in progress: key id %d becomes current at %s", o.Keys.Current^1, o.SwitchAt.UTC().Format(time.RFC3339))
	}
	if !rot.Force {
		if !o.Switched.IsZero() && now.Sub(o.Switched) < rot.MinAge {
			return "", badf("key id %d became current %v ago: connections opened before then still carry key id %d, which this rotation would overwrite; wait until %s or lower --min-age (or --force)",
				o.Keys.Current, now.Sub(o.Switched).Round(time.Second), o.Keys.Current^1, o.Switched.Add(rot.MinAge).UTC().Format(time.RFC3339))
		}
		if c.opts.Cheetah != nil {
			var missing []forwarding.ServerID
			for _, id := range sortedKeys(in.dips) {
				d := in.dips[id]
				if s, ok := in.w.Table().Servers[id]; ok && s.State == forwarding.Active && !c.confirmed(name, id, d.Addr, o.Keys) {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return "", badf("the agents of servers %v have not confirmed the current keys: after this rotation they would write cookies with a key the muxes no longer have (fix the agents' API, or --force)", missing)
			}
		}
	}
	k, err := cookie.NewKey()
	if err != nil {
		return "", err
	}
	spare := o.Keys.Current ^ 1
	o.Keys.Keys[spare] = k
	o.SwitchAt = now.Add(rot.Settle).UTC()
	cfg := *in.config
	cfg.Cheetah = &o
	old := in.config
	in.config = &cfg
	if err := c.writeConfig(ctx, in); err != nil {
		in.config = old
		return "", err
	}
	if err := c.reconcile(ctx, in); err != nil {
		c.forget(in)
		return "", err
	}
	return fmt.Sprintf("new key in slot %d published to the muxes (generation %d); new connections take key id %d from %s (settle %v); key id %d stays valid for the connections that carry it",
		spare, in.w.Table().Generation, spare, o.SwitchAt.Format(time.RFC3339), rot.Settle, o.Keys.Current), nil
}
