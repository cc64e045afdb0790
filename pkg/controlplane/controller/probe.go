package controller

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/beamer-lb/beamer/pkg/node/agentapi"
)

// prober runs the probe an instance configures (forwarding.HealthCheck).
type prober struct {
	timeout time.Duration
	// dial opens the probes' connections (tests dial from a namespace).
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	agents *agentapi.Client
	http   *http.Client
}

func newProber(timeout time.Duration) *prober {
	d := &net.Dialer{Timeout: timeout}
	return newProberDial(timeout, d.DialContext)
}

func newProberDial(timeout time.Duration, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *prober {
	// No keep-alive: a probe must see whether a new connection succeeds,
	// and thousands of DIPs must not hold thousands of idle connections.
	tr := &http.Transport{DisableKeepAlives: true, ResponseHeaderTimeout: timeout, DialContext: dial}
	hc := &http.Client{Transport: tr, Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &prober{timeout: timeout, dial: dial, agents: &agentapi.Client{HTTP: hc}, http: hc}
}

// statusError is an HTTP probe the server answered with a status outside 2xx.
type statusError struct{ url, status string }

func (e *statusError) Error() string { return fmt.Sprintf("GET %s: %s", e.url, e.status) }

// serverAnswered tells a failed probe the server itself answered (its agent
// reported the service down, it refused the connection, it sent an HTTP
// error) from one that did not reach it (timeout, no route): only the
// latter suggests the server may be dead.
func serverAnswered(err error) bool {
	var se *agentapi.ServiceError
	var me *agentapi.MismatchError
	var st *statusError
	return errors.As(err, &se) || errors.As(err, &me) || errors.As(err, &st) || errors.Is(err, syscall.ECONNREFUSED)
}

// probe checks one DIP; the error text is what operators see as the reason.
func (p *prober) probe(ctx context.Context, in *forwarding.Instance, d DIP) error {
	h := in.HealthProbe()
	switch h.Kind {
	case forwarding.HealthNone:
		return nil
	case forwarding.HealthTCP:
		c, err := p.dial(ctx, "tcp", netip.AddrPortFrom(d.Addr, h.Port).String())
		if err != nil {
			return err
		}
		return c.Close()
	case forwarding.HealthHTTP:
		u := "http://" + net.JoinHostPort(d.Addr.String(), strconv.Itoa(int(h.Port))) + h.Path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := p.http.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return &statusError{url: u, status: resp.Status}
		}
		return nil
	}
	// The agent connects to each VIP on the server, leaving itself a part
	// of the timeout to answer in.
	agent := netip.AddrPortFrom(d.Addr, h.AgentPort)
	for _, vip := range in.VIPs {
		if err := p.agents.HealthExpect(ctx, agent, vip, h.Port, p.timeout*3/4, agentExpect(in, d)); err != nil {
			return err
		}
	}
	return nil
}

// agentExpect is what the server's agent must be configured with: its
// server id, and for every strategy whose buckets keep previous owners
// (Beamer, and Cheetah, whose packets without a cookie fall back to
// Beamer's buckets and daisy chaining) the bucket count and chaining
// window it finds a packet's bucket and daisy-chains with. An agent
// configured otherwise refuses the probe, so the server stays down with
// the mismatch as its reason instead of breaking connections. (Maglev,
// Prism and AWFD muxes never name a previous owner: their agents never
// chain, and their bucket count is sent with each request that needs it.)
func agentExpect(in *forwarding.Instance, d DIP) agentapi.Expect {
	e := agentapi.Expect{ServerID: uint16(d.ID)}
	if in.Strategy == "" || hasHistories(in) {
		e.Buckets, e.Window = in.Buckets, in.ChainWindow
	}
	return e
}
