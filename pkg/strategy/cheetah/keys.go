package cheetah

import (
	"context"
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
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
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

// Pusher pushes keys to one agent (agentapi.Client; tests give a
// fake).
type Pusher interface {
	PushCheetah(ctx context.Context, agent netip.AddrPort, p agentapi.CheetahPush) (*agentapi.CheetahReport, error)
}

// ControllerOptions turn on the key push and load collection
// (controller.Options.Strategies[forwarding.StrategyCheetah]; nil: agents
// have their keys by hand).
type ControllerOptions struct {
	// Every is how often each Cheetah instance's agents are pushed the keys
	// and asked their load, and so how often new loads are published at
	// most (default 2 s).
	Every time.Duration
	// Timeout of one push (default 1 s).
	Timeout time.Duration
	// Client pushes; nil: HTTP to DIP:agent_port.
	Client Pusher
	// Logger receives pushes failing (Warn) and working again (Info),
	// never the keys; nil: the controller's.
	Logger *slog.Logger
}

// optionsOf is c's Cheetah options with defaults filled in, or nil: the
// push is off.
func optionsOf(c ctlstrategy.Ctl) *ControllerOptions {
	p, ok := c.Options().(*ControllerOptions)
	if !ok || p == nil {
		return nil
	}
	o := *p
	if o.Logger == nil {
		o.Logger = c.Logger()
	}
	o.fill()
	return &o
}

func (o *ControllerOptions) fill() {
	if o.Every <= 0 {
		o.Every = 2 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Client == nil {
		o.Client = &agentapi.Client{}
	}
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

func newRuntime() *cheetahRuntime {
	return &cheetahRuntime{inst: map[string]*cheetahInstanceState{}}
}

// stateOf is controller c's Cheetah state (ctlstrategy.StateMaker).
func stateOf(c ctlstrategy.Ctl) *cheetahRuntime {
	if r, ok := c.State().(*cheetahRuntime); ok {
		return r
	}
	return newRuntime()
}

// confirmed: the agent of id at addr confirmed keys within three rounds.
func confirmed(c ctlstrategy.Ctl, o *ControllerOptions, name string, id forwarding.ServerID, addr netip.Addr, keys cookie.Keys) bool {
	r := stateOf(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	ci := r.inst[name]
	if ci == nil {
		return false
	}
	s := ci.servers[id]
	return s != nil && s.addr == addr && s.keys == keys && c.Now().Sub(s.at) <= 3*o.Every
}

// Held: with the push on, a server that is not active yet gets no new
// connection before its agent confirmed the current keys.
func (Controller) Held(c ctlstrategy.Ctl, in ctlstrategy.Instance, t *forwarding.Table, id forwarding.ServerID) bool {
	o := optionsOf(c)
	if o == nil {
		return false // keys configured by hand on the agents
	}
	if s, ok := t.Servers[id]; ok && s.State == forwarding.Active {
		return false // serving already: a missed push must not take it out
	}
	cfg := in.Config()
	return !confirmed(c, o, cfg.Name, id, in.DIPs()[id].Addr, cfg.Cheetah.Keys)
}

// HoldsSlot keeps a removed server's slot (retired, its id refused to
// any other address) while its agent reports live connections to the
// instance's VIPs: their cookies name the slot, however old they are. An
// agent that stops answering holds it for three more rounds, then the
// chain window alone decides (docs/strategy-cheetah.md, "Server table
// slots").
func (Controller) HoldsSlot(c ctlstrategy.Ctl, in ctlstrategy.Instance, id forwarding.ServerID) bool {
	o := optionsOf(c)
	if o == nil {
		return false
	}
	r := stateOf(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	ci := r.inst[in.Config().Name]
	if ci == nil {
		return false
	}
	s := ci.servers[id]
	return s != nil && s.known && s.load > 0 && c.Now().Sub(s.at) <= 3*o.Every
}

// ExtraState adds the keys of the instance record and, for p2c, the loads
// of the active servers, when they differ from what t carries.
func (Controller) ExtraState(c ctlstrategy.Ctl, in ctlstrategy.Instance, t *forwarding.Table, d *forwarding.Delta) {
	o := in.Config().Cheetah
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
		r := stateOf(c)
		r.mu.Lock()
		if ci := r.inst[in.Config().Name]; ci != nil {
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

// Tick makes due key switches and, with the push on, pushes the
// keys to every agent of every Cheetah instance whose interval passed,
// then publishes what changed (keys, loads, servers now confirmed).
func (Controller) Tick(ctx context.Context, c ctlstrategy.Ctl) error {
	// The store is listed every 10 s only (a listing reads every key of
	// every instance); an instance this controller just worked on is in
	// its cache meanwhile.
	r := stateOf(c)
	now := c.Now()
	if r.names == nil || now.Sub(r.listed) >= 10*time.Second || now.Before(r.listed) {
		names, err := c.Instances(ctx)
		if err != nil {
			return err
		}
		r.names, r.listed = names, now
	}
	names := slices.Clone(r.names)
	for _, n := range c.Loaded() {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var errs []error
	for _, n := range names {
		if err := instanceRound(ctx, c, n); err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

func instanceRound(ctx context.Context, c ctlstrategy.Ctl, name string) error {
	in, err := c.Load(ctx, name)
	if errors.Is(err, ring.ErrNoInstance) {
		return nil // deleted since the listing
	}
	if err != nil || in.Config().Strategy != forwarding.StrategyCheetah || in.Config().Cheetah == nil {
		return err
	}
	now := c.Now()
	switched := false
	if o := in.Config().Cheetah; !o.SwitchAt.IsZero() && !now.Before(o.SwitchAt) {
		if err := switchKey(ctx, c, in, now); err != nil {
			return err
		}
		switched = true
	}
	changed := false
	if po := optionsOf(c); po != nil {
		r := stateOf(c)
		r.mu.Lock()
		ci := r.inst[name]
		if ci == nil {
			ci = &cheetahInstanceState{servers: map[forwarding.ServerID]*cheetahServer{}}
			r.inst[name] = ci
		}
		due := switched || now.Sub(ci.last) >= po.Every
		if due {
			ci.last = now
		}
		r.mu.Unlock()
		if due {
			changed = pushKeys(ctx, c, po, in, ci)
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
func pushKeys(ctx context.Context, c ctlstrategy.Ctl, o *ControllerOptions, in ctlstrategy.Instance, ci *cheetahInstanceState) bool {
	cfg := in.Config()
	port := cfg.HealthProbe().AgentPort
	dips := in.DIPs()
	targets := map[forwarding.ServerID]netip.Addr{}
	for id, s := range in.Table().Servers {
		targets[id] = s.Addr
	}
	for id, d := range dips {
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
	r := stateOf(c)
	r.mu.Lock()
	defer r.mu.Unlock()
	now := c.Now()
	t := in.Table()
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
			if d, ok := dips[a.id]; ok && d.EffectiveWeight > 0 && s.keys != cfg.Cheetah.Keys {
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

// switchKey makes the key slot a rotation filled current.
func switchKey(ctx context.Context, c ctlstrategy.Ctl, in ctlstrategy.Instance, now time.Time) error {
	o := *in.Config().Cheetah
	o.Keys.Current ^= 1
	o.SwitchAt, o.Switched = time.Time{}, now.UTC().Truncate(time.Second)
	cfg := *in.Config()
	cfg.Cheetah = &o
	if err := in.WriteConfig(ctx, &cfg); err != nil {
		return err
	}
	c.Logger().Info("cheetah: key id is current for new connections", "instance", cfg.Name, "key_id", o.Keys.Current)
	return nil
}
