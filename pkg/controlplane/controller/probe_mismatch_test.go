package controller

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
	"github.com/beamer-lb/beamer/pkg/node/config"
	"github.com/beamer-lb/beamer/pkg/store/storetest"
)

// TestProbeAgentMismatch: an agent configured for another server id,
// bucket count or chaining window than the instance refuses the
// controller's probes, and the server stays without buckets with the
// mismatch as its reason — instead of taking buckets whose packets it
// would hash into the wrong bucket.
func TestProbeAgentMismatch(t *testing.T) {
	l := newDSRLab(t)
	// A second agent API on the server, configured as the agent daemon
	// configures its own: server 1025, the VIP with 20 buckets, 4 minutes.
	var api *agentapi.Endpoint
	var refused []string
	if err := l.srv.Do(func() (err error) {
		api, err = agentapi.Serve("198.18.0.10:9302", agentapi.Options{VIPs: []netip.Addr{l.vip}, ServerID: 1025,
			Params:     map[netip.Addr]agentapi.VIPParams{l.vip: {Buckets: 20, Window: 4 * time.Minute}},
			OnMismatch: func(_ netip.Addr, why string) { refused = append(refused, why) }})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	p := newProberDial(5*time.Second, l.dial)
	ctx := storetest.Context(t)
	h := &forwarding.HealthCheck{Kind: forwarding.HealthAgent, AgentPort: 9302}
	in := func(b uint32, w time.Duration) *forwarding.Instance {
		return &forwarding.Instance{Name: "web", Strategy: forwarding.StrategyBeamer, VIPs: []netip.Addr{l.vip}, PortLow: 80, PortHigh: 80,
			Buckets: b, ChainWindow: w, Health: h}
	}
	for _, c := range []struct {
		in   *forwarding.Instance
		id   forwarding.ServerID
		want string // "" = healthy
	}{
		{in(20, 4*time.Minute), 1025, ""},
		{in(20, 4*time.Minute), 1026, "this agent is server 1025, the controller probes it as server 1026"},
		{in(6400, 4*time.Minute), 1025, "198.18.100.1 has 20 buckets here, 6400 in the instance (agent --vip 198.18.100.1:6400)"},
		{in(20, time.Minute), 1025, "chaining window of 4m0s here, 1m0s in the instance"},
	} {
		err := p.probe(ctx, c.in, DIP{ID: c.id, Addr: l.dip, Weight: 1})
		var me *agentapi.MismatchError
		if c.want == "" {
			if err != nil {
				t.Errorf("agent configured as the instance: %v", err)
			}
			continue
		}
		if !errors.As(err, &me) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("probe of id %d, %d buckets, window %v: %v, want a refusal saying %q", c.id, c.in.Buckets, c.in.ChainWindow, err, c.want)
		}
		if !serverAnswered(err) {
			t.Errorf("a refusal counts as the server not answering: %v", err)
		}
	}
	if len(refused) != 3 {
		t.Errorf("the agent heard %d refusals, want 3: %q", len(refused), refused)
	}

	// Through the controller: the DIP added pending stays pending, no
	// buckets, the refusal its reason.
	root, clk := newRoot(), newClock()
	c := New(shared, root, Options{Now: clk.now, PendingUntilProbed: true})
	if err := c.CreateInstance(ctx, in(6400, 4*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDIP(ctx, "web", 1025, l.dip, 1); err != nil {
		t.Fatal(err)
	}
	logs, logger := newLogBook()
	hc := newChecker(HealthOptions{Probe: p.probe, Logger: logger})
	if err := hc.round(ctx, c); err != nil {
		t.Fatal(err)
	}
	v, err := Show(ctx, shared, root, "web", clk.now())
	if err != nil {
		t.Fatal(err)
	}
	got := v.DIPs[0]
	if got.Health == "up" || got.Buckets != 0 || !strings.Contains(got.LastError, "refuses") {
		t.Errorf("misconfigured agent: %s, %d buckets, last error %q (logs %q)", got.Health, got.Buckets, got.LastError, logs.all())
	}
}

// TestProbeCheetahAgentWithoutWindow: a Cheetah instance chains like Beamer
// (packets without a cookie fall back to buckets and daisy chaining), so an
// agent started without a window (--vip VIP:BUCKETS: the 4-minute default)
// for a Cheetah instance with another window is refused with the reason,
// and the server gets no buckets — as for Beamer. Strategies whose muxes
// never name a previous owner (Maglev, Prism, AWFD) do not check the window.
func TestProbeCheetahAgentWithoutWindow(t *testing.T) {
	l := newDSRLab(t)
	// The agent as `beamer agent --vip 198.18.100.1:20` configures itself.
	av := config.AgentVIP{VIP: l.vip, Buckets: 20}
	var api *agentapi.Endpoint
	if err := l.srv.Do(func() (err error) {
		api, err = agentapi.Serve("198.18.0.10:9303", agentapi.Options{VIPs: []netip.Addr{l.vip}, ServerID: 1025,
			Params: map[netip.Addr]agentapi.VIPParams{l.vip: {Buckets: av.Buckets, Window: av.Window()}}})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	p := newProberDial(5*time.Second, l.dial)
	ctx := storetest.Context(t)
	h := &forwarding.HealthCheck{Kind: forwarding.HealthAgent, AgentPort: 9303}
	in := func(s forwarding.Strategy, b uint32, w time.Duration) *forwarding.Instance {
		i := &forwarding.Instance{Name: "web", Strategy: s, VIPs: []netip.Addr{l.vip}, PortLow: 80, PortHigh: 80,
			Buckets: b, ChainWindow: w, Health: h}
		if s == forwarding.StrategyCheetah {
			i.Cheetah = cheetahInstance(b).Cheetah
		}
		return i
	}
	for _, c := range []struct {
		in   *forwarding.Instance
		want string // "" = healthy
	}{
		{in(forwarding.StrategyCheetah, 20, 30*time.Second), "198.18.100.1 has a chaining window of 4m0s here, 30s in the instance"},
		{in(forwarding.StrategyCheetah, 23, forwarding.DefaultChainWindow), "198.18.100.1 has 20 buckets here, 23 in the instance (agent --vip 198.18.100.1:23)"},
		{in(forwarding.StrategyCheetah, 20, forwarding.DefaultChainWindow), ""},
		{in(forwarding.StrategyMaglev, 23, 0), ""},
		{in(forwarding.StrategyAWFD, 23, 0), ""},
		{in(forwarding.StrategyPrism, 23, 30*time.Second), ""},
	} {
		err := p.probe(ctx, c.in, DIP{ID: 1025, Addr: l.dip, Weight: 1})
		var me *agentapi.MismatchError
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s, %d buckets, window %v: %v", c.in.Strategy, c.in.Buckets, c.in.ChainWindow, err)
		case c.want != "" && (!errors.As(err, &me) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s, %d buckets, window %v: %v, want a refusal saying %q", c.in.Strategy, c.in.Buckets, c.in.ChainWindow, err, c.want)
		}
	}

	// Through the controller: the Cheetah DIP stays pending, no buckets,
	// the refusal (with the window) its reason.
	root, clk := newRoot(), newClock()
	c := New(shared, root, Options{Now: clk.now, PendingUntilProbed: true})
	if err := c.CreateInstance(ctx, in(forwarding.StrategyCheetah, 20, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDIP(ctx, "web", 1025, l.dip, 1); err != nil {
		t.Fatal(err)
	}
	hc := newChecker(HealthOptions{Probe: p.probe})
	if err := hc.round(ctx, c); err != nil {
		t.Fatal(err)
	}
	v, err := Show(ctx, shared, root, "web", clk.now())
	if err != nil {
		t.Fatal(err)
	}
	got := v.DIPs[0]
	if got.Health == "up" || got.Buckets != 0 || !strings.Contains(got.LastError, "chaining window of 4m0s here, 30s in the instance") {
		t.Errorf("cheetah agent without a window: %s, %d buckets, last error %q", got.Health, got.Buckets, got.LastError)
	}
}
