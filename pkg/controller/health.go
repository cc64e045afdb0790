package controller

import (
	"context"
	"math"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// HealthOptions configure DIP health checks.
type HealthOptions struct {
	Interval time.Duration // between probes of one DIP (default 2 s)
	Timeout  time.Duration // of one TCP connect (default 1 s)
	Fall     int           // consecutive failures that mark a DIP down (default 3)
	Rise     int           // consecutive successes that mark it up (default 2)
	// Flap damping, in the manner of BGP route-flap damping: every up→down
	// transition adds one to a penalty that halves every HalfLife; while
	// the penalty is above Suppress, a recovered DIP stays down, until the
	// penalty decays below Reuse. Defaults: 5 min, 2.5, 1 (three flaps
	// within a few minutes suppress, as with BGP's 1000/2000/750).
	HalfLife        time.Duration
	Suppress, Reuse float64
	// Probe checks one DIP; nil means a TCP connect to addr:port.
	Probe func(ctx context.Context, addr netip.Addr, port uint16) error
}

func (o *HealthOptions) fill() {
	if o.Interval == 0 {
		o.Interval = 2 * time.Second
	}
	if o.Timeout == 0 {
		o.Timeout = time.Second
	}
	if o.Fall == 0 {
		o.Fall = 3
	}
	if o.Rise == 0 {
		o.Rise = 2
	}
	if o.HalfLife == 0 {
		o.HalfLife = 5 * time.Minute
	}
	if o.Suppress == 0 {
		o.Suppress = 2.5
	}
	if o.Reuse == 0 {
		o.Reuse = 1
	}
	if o.Probe == nil {
		timeout := o.Timeout
		o.Probe = func(ctx context.Context, addr netip.Addr, port uint16) error {
			d := net.Dialer{Timeout: timeout}
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(addr.String(), strconv.Itoa(int(port))))
			if err == nil {
				c.Close()
			}
			return err
		}
	}
}

// health is the damping state of one DIP.
type health struct {
	successes, failures int
	penalty             float64
	penaltyAt           time.Time
	suppressed          bool // flapping: kept down until penalty < Reuse
}

func (h *health) decay(now time.Time, halfLife time.Duration) {
	if !h.penaltyAt.IsZero() {
		h.penalty *= math.Pow(0.5, now.Sub(h.penaltyAt).Seconds()/halfLife.Seconds())
	}
	h.penaltyAt = now
}

// verdict feeds one probe result and returns whether the DIP should be
// marked up, given whether it is marked down now.
func (h *health) verdict(ok, down bool, now time.Time, o *HealthOptions) (up bool) {
	h.decay(now, o.HalfLife)
	if ok {
		h.successes++
		h.failures = 0
	} else {
		h.failures++
		h.successes = 0
	}
	if h.suppressed && h.penalty < o.Reuse {
		h.suppressed = false
	}
	switch {
	case !down && h.failures >= o.Fall:
		h.penalty++
		if h.penalty >= o.Suppress {
			h.suppressed = true
		}
		return false
	case down && h.successes >= o.Rise && !h.suppressed:
		return true
	}
	return !down
}

// checker probes the DIPs of all instances.
type checker struct {
	opts  HealthOptions
	state map[string]map[forwarding.ServerID]*health
}

func newChecker(o HealthOptions) *checker {
	o.fill()
	return &checker{opts: o, state: map[string]map[forwarding.ServerID]*health{}}
}

// round probes every DIP of every instance once (in parallel) and applies
// the verdicts that changed a DIP's health.
func (hc *checker) round(ctx context.Context, c *Controller) error {
	names, err := c.Instances(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		in, err := c.instance(ctx, name)
		if err != nil {
			return err
		}
		type result struct {
			id forwarding.ServerID
			ok bool
		}
		var probes []*DIP
		for _, d := range in.dips {
			if d.State != Removing {
				probes = append(probes, d)
			}
		}
		results := make(chan result, len(probes))
		pctx, cancel := context.WithTimeout(ctx, hc.opts.Timeout)
		sem := make(chan struct{}, 64) // bound concurrent connects
		for _, d := range probes {
			go func(d DIP) {
				sem <- struct{}{}
				defer func() { <-sem }()
				results <- result{d.ID, hc.opts.Probe(pctx, d.Addr, in.config.PortLow) == nil}
			}(*d)
		}
		st := hc.state[name]
		if st == nil {
			st = map[forwarding.ServerID]*health{}
			hc.state[name] = st
		}
		now := c.now()
		var changes []result
		for range probes {
			r := <-results
			h := st[r.id]
			if h == nil {
				h = &health{}
				st[r.id] = h
			}
			d := in.dips[r.id]
			if d == nil {
				continue
			}
			if up := h.verdict(r.ok, d.Down, now, &hc.opts); up == d.Down {
				changes = append(changes, result{r.id, up})
			}
		}
		cancel()
		for _, ch := range changes {
			if err := c.SetHealth(ctx, name, ch.id, ch.ok); err != nil {
				return err
			}
		}
	}
	return nil
}
