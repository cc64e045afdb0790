package lab

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Churn is a random soak: every Every from From to Until, one random
// server event — a removal, an addition (new or earlier removed server),
// a weight change, a health failure or a recovery — each its own
// request, as operators and failures come, drawn from a seed so a run can
// be replayed.
type Churn struct {
	From    time.Duration `json:"from"`
	Until   time.Duration `json:"until"`
	Every   time.Duration `json:"every"`
	Servers int           `json:"servers"` // the churn picks servers 0..Servers-1
	Seed    int64         `json:"seed"`    // set by Expanded
}

// churnMinPool: a churn never leaves fewer servers in the pool, nor fewer
// healthy ones than churnMinHealthy, so the service itself never goes.
const (
	churnMinPool    = 3
	churnMinHealthy = 2
)

func parseChurn(sc *Scenario, args []string) error {
	if len(args) != 4 {
		return errors.New("want `churn FROM UNTIL EVERY SERVERS`")
	}
	var d [3]time.Duration
	for i, a := range args[:3] {
		v, err := time.ParseDuration(a)
		if err != nil {
			return fmt.Errorf("%q is not a duration", a)
		}
		d[i] = v
	}
	n, err := ints(args[3:])
	if err != nil {
		return err
	}
	sc.Churn = &Churn{From: d[0], Until: d[1], Every: d[2], Servers: n[0]}
	return nil
}

func (c *Churn) validate(end time.Duration) error {
	switch {
	case c.From < 0 || c.Until <= c.From:
		return fmt.Errorf("from %v until %v: want 0 ≤ from < until", c.From, c.Until)
	case c.Until >= end:
		return fmt.Errorf("until %v must come before the end (%v)", c.Until, end)
	case c.Every < 500*time.Millisecond:
		return fmt.Errorf("every %v: at most two events a second", c.Every)
	case c.Servers < churnMinPool+1 || c.Servers > MaxServers:
		return fmt.Errorf("%d servers: want %d–%d", c.Servers, churnMinPool+1, MaxServers)
	}
	return nil
}

// Expanded is the scenario with its churn drawn from seed as ordinary
// events (the scenario itself if it has no churn). The churn owns the
// servers: other server events are refused.
func (sc *Scenario) Expanded(seed int64) (*Scenario, error) {
	if sc.Churn == nil {
		return sc, nil
	}
	for _, e := range sc.Events {
		switch e.Action {
		case "add-server", "remove-server", "fail-server", "set-weight", "fail-health", "restore-health", "apply":
			return nil, fmt.Errorf("scenario %s: %q: a churn scenario leaves the servers to the churn", sc.Name, e)
		}
	}
	for _, i := range sc.InitialServers {
		if i >= sc.Churn.Servers {
			return nil, fmt.Errorf("scenario %s: server %d is outside the churn's %d servers", sc.Name, i, sc.Churn.Servers)
		}
	}
	out := *sc
	c := *sc.Churn
	c.Seed = seed
	out.Churn = &c
	out.Events = nil
	drawn := c.draw(sc.InitialServers)
	out.Events = append(drawn, sc.Events...)
	slices.SortStableFunc(out.Events, func(a, b Event) int { return int(a.At - b.At) })
	return &out, out.Validate()
}

// draw plays the churn on a model of the pool and returns its events.
func (c *Churn) draw(initial []int) []Event {
	r := rand.New(rand.NewPCG(uint64(c.Seed), 0xc4a2))
	inPool := map[int]bool{}
	failed := map[int]bool{}
	weight := map[int]int{}
	for _, i := range initial {
		inPool[i], weight[i] = true, 1
	}
	var pick = func(ok func(i int) bool) []int {
		var out []int
		for i := 0; i < c.Servers; i++ {
			if ok(i) {
				out = append(out, i)
			}
		}
		return out
	}
	var events []Event
	for t := c.From; t < c.Until; t += c.Every {
		pool := pick(func(i int) bool { return inPool[i] })
		healthy := pick(func(i int) bool { return inPool[i] && !failed[i] })
		type choice struct {
			action string
			from   []int
		}
		var choices []choice
		if len(pool) > churnMinPool {
			// Removing a failed server is allowed; a healthy one only if
			// enough healthy ones stay.
			choices = append(choices, choice{"remove-server", pick(func(i int) bool {
				return inPool[i] && (failed[i] || len(healthy) > churnMinHealthy)
			})})
		}
		if out := pick(func(i int) bool { return !inPool[i] && !failed[i] }); len(out) > 0 {
			choices = append(choices, choice{"add-server", out})
		}
		choices = append(choices, choice{"set-weight", pool})
		if len(healthy) > churnMinHealthy {
			choices = append(choices, choice{"fail-health", healthy})
		}
		if f := pick(func(i int) bool { return failed[i] }); len(f) > 0 {
			choices = append(choices, choice{"restore-health", f})
		}
		ch := choices[r.IntN(len(choices))]
		if len(ch.from) == 0 {
			continue
		}
		i := ch.from[r.IntN(len(ch.from))]
		e := Event{At: t, Action: ch.action, Args: []int{i}}
		switch ch.action {
		case "remove-server":
			inPool[i] = false
		case "add-server":
			inPool[i], weight[i] = true, 1
		case "set-weight":
			w := 1 + r.IntN(4)
			if w == weight[i] {
				w = w%4 + 1
			}
			weight[i] = w
			e.Args = append(e.Args, w)
		case "fail-health":
			failed[i] = true
		case "restore-health":
			failed[i] = false
		}
		events = append(events, e)
	}
	return events
}
