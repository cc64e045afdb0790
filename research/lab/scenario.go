package lab

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Event is one step of a scenario, at a time after the load started.
type Event struct {
	At     time.Duration `json:"at"`
	Action string        `json:"action"`
	Args   []int         `json:"args,omitempty"`
}

func (e Event) String() string {
	s := e.Action
	for _, a := range e.Args {
		s += " " + strconv.Itoa(a)
	}
	return s
}

// actions: name → number of integer arguments, and what it does.
var actions = map[string]struct {
	args int
	help string
}{
	"add-server":     {1, "add-server I: start server I if needed and add it to the pool"},
	"remove-server":  {1, "remove-server I: take server I out of the pool (it keeps serving its connections)"},
	"remove-heir":    {1, "remove-heir I: take out of the pool the server that owns the buckets of most of server I's connections, among those whose buckets moved most (heir.go)"},
	"fail-server":    {1, "fail-server I: server I's interface goes down and its daemons stop"},
	"fail-health":    {1, "fail-health I: server I's service refuses new connections (health checks fail); its link, agent and established connections stay"},
	"restore-health": {1, "restore-health I: server I's service accepts connections again"},
	"set-weight":     {2, "set-weight I W: give server I weight W"},
	"add-mux":        {1, "add-mux I: start mux I; it announces the VIP over BGP"},
	"remove-mux":     {1, "remove-mux I: stop mux I in order (BGP withdraw, then detach)"},
	"kill-mux":       {1, "kill-mux I: mux I's interface goes down; the router notices after the BGP hold time"},
	"flood-start":    {1, "flood-start RATE: SYN flood the VIP from spoofed sources at RATE SYNs/s (from the last client)"},
	"flood-stop":     {0, "flood-stop: end the SYN flood"},
	"apply":          {-1, "apply I…: the pool becomes exactly servers I… the declarative way: `ctl export`, the server list edited, `ctl apply -f` (one add and one remove request; servers not running are started)"},
	"rotate-key":     {1, "rotate-key S: cheetah: `ctl cheetah rotate-key` (a new cookie key, current for new connections S seconds later)"},
	"end":            {0, "end: stop the load and count (required, last)"},
}

// ActionHelp describes every scenario action, one a line.
func ActionHelp() string {
	var lines []string
	for _, a := range actions {
		lines = append(lines, "  "+a.help)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// Scenario is a lab run's schedule: what runs before the load starts, then
// timed events.
type Scenario struct {
	Name           string  `json:"name"`
	InitialServers []int   `json:"initial_servers"`
	InitialMuxes   []int   `json:"initial_muxes"`
	Events         []Event `json:"events"`
	// Window, if set, is the chaining window of this scenario (instead of
	// the parameters').
	Window time.Duration `json:"window,omitempty"`
	// BindVIP: servers' HTTP service listens only on VIP:80, as a DSR
	// service usually does; otherwise on port 80 of every address.
	BindVIP bool `json:"bind_vip,omitempty"`
	// Idle adds, per client, persistent connections that are idle most of
	// the time (websockets, database connections).
	Idle IdleLoad `json:"idle,omitzero"`
	// Churn, if set, is expanded into random events (Expand).
	Churn *Churn `json:"churn,omitempty"`
	// HoldInterval, if set, is how often the controller asks the agents
	// for the connections previous owners hold (--hold-interval), and the
	// controller serves its metrics; EvictOldest runs it with
	// --history-evict-oldest (the K limit's rule before issue 28).
	HoldInterval time.Duration `json:"hold_interval,omitempty"`
	EvictOldest  bool          `json:"evict_oldest,omitempty"`
}

// IdleLoad is PerClient persistent connections per client, each asking a
// small response once per Every on average (uniformly 0.5–1.5 × Every
// apart, drawn from the seed) and silent in between.
type IdleLoad struct {
	PerClient int           `json:"per_client"`
	Every     time.Duration `json:"every"`
}

// ParseScenario reads a scenario file: lines `servers I…`, `muxes I…`
// (what runs when the load starts), optional settings, then `TIME ACTION
// ARGS…` with TIME a Go duration after the load starts (5s, 1m30s) in
// order, the last one `end`. `#` starts a comment. Settings:
//
//	window DURATION            chaining window of this scenario
//	bind vip|all               servers' HTTP service on VIP:80 only, or on :80
//	idle N EVERY               N more connections per client, idle but for one small request per EVERY
//	churn FROM UNTIL EVERY S   random server events every EVERY from FROM to UNTIL over servers 0..S-1 (seeded by --seed)
//	holds EVERY                the controller asks agents for held connections every EVERY, and serves metrics
//	evict-oldest               the controller pushes the oldest owner out of a full history (--history-evict-oldest)
//
// For example:
//
//	servers 0 1 2 3
//	muxes 0 1
//	10s remove-server 3
//	20s remove-mux 1
//	35s end
func ParseScenario(name string, r io.Reader) (*Scenario, error) {
	sc := &Scenario{Name: name}
	s := bufio.NewScanner(r)
	line := 0
	for s.Scan() {
		line++
		text, _, _ := strings.Cut(s.Text(), "#")
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, a...))
		}
		if f[0] == "servers" || f[0] == "muxes" {
			ids, err := ints(f[1:])
			if err != nil || len(ids) == 0 {
				return nil, bad("%s: want one or more indexes", f[0])
			}
			if f[0] == "servers" {
				sc.InitialServers = ids
			} else {
				sc.InitialMuxes = ids
			}
			continue
		}
		if set, ok := settings[f[0]]; ok {
			if err := set(sc, f[1:]); err != nil {
				return nil, bad("%s: %v", f[0], err)
			}
			continue
		}
		at, err := time.ParseDuration(f[0])
		if err != nil || at < 0 {
			return nil, bad("%q is neither `servers`, `muxes`, a setting (window, bind, idle, churn) nor a time like 10s", f[0])
		}
		if len(f) < 2 {
			return nil, bad("no action after %s", f[0])
		}
		a, ok := actions[f[1]]
		if !ok {
			return nil, bad("unknown action %q; actions:\n%s", f[1], ActionHelp())
		}
		args, err := ints(f[2:])
		if a.args < 0 && (err != nil || len(args) == 0) { // one or more
			return nil, bad("%s takes one or more integer arguments: %s", f[1], a.help)
		}
		if a.args >= 0 && (err != nil || len(args) != a.args) {
			return nil, bad("%s takes %d integer argument(s): %s", f[1], a.args, a.help)
		}
		sc.Events = append(sc.Events, Event{At: at, Action: f[1], Args: args})
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return sc, sc.Validate()
}

func ints(f []string) ([]int, error) {
	out := make([]int, len(f))
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a non-negative integer", s)
		}
		out[i] = n
	}
	return out, nil
}

// Validate checks the schedule against itself: times in order, one final
// `end`, and every server or mux named within the lab's plan.
func (sc *Scenario) Validate() error {
	if len(sc.InitialServers) == 0 || len(sc.InitialMuxes) == 0 {
		return fmt.Errorf("scenario %s: needs `servers …` and `muxes …` lines (what runs at the start)", sc.Name)
	}
	if len(sc.Events) == 0 || sc.Events[len(sc.Events)-1].Action != "end" {
		return fmt.Errorf("scenario %s: the last event must be `end`", sc.Name)
	}
	for i, e := range sc.Events {
		if i > 0 && e.At < sc.Events[i-1].At {
			return fmt.Errorf("scenario %s: event %q at %v comes before the previous one (%v)", sc.Name, e, e.At, sc.Events[i-1].At)
		}
		if e.Action == "end" && i != len(sc.Events)-1 {
			return fmt.Errorf("scenario %s: `end` must be the last event", sc.Name)
		}
		if e.Action == "set-weight" && (e.Args[1] < 1 || e.Args[1] > 1_000_000) {
			return fmt.Errorf("scenario %s: %q: weight must be 1–1000000", sc.Name, e)
		}
		if e.Action == "flood-start" && (e.Args[0] < 1 || e.Args[0] > MaxFloodRate) {
			return fmt.Errorf("scenario %s: %q: rate must be 1–%d", sc.Name, e, MaxFloodRate)
		}
	}
	if sc.Window < 0 {
		return fmt.Errorf("scenario %s: negative chaining window", sc.Name)
	}
	if sc.Idle.PerClient > 0 && sc.Idle.Every < 100*time.Millisecond {
		return fmt.Errorf("scenario %s: idle connections must ask at most every 100ms", sc.Name)
	}
	if c := sc.Churn; c != nil {
		if err := c.validate(sc.Duration()); err != nil {
			return fmt.Errorf("scenario %s: churn: %w", sc.Name, err)
		}
	}
	return nil
}

// settings are the scenario file's setting lines, by keyword.
var settings = map[string]func(sc *Scenario, args []string) error{
	"window": func(sc *Scenario, args []string) error {
		if len(args) != 1 {
			return errors.New("want `window DURATION`")
		}
		d, err := time.ParseDuration(args[0])
		if err != nil || d <= 0 {
			return fmt.Errorf("%q is not a positive duration", args[0])
		}
		sc.Window = d
		return nil
	},
	"bind": func(sc *Scenario, args []string) error {
		if len(args) != 1 || (args[0] != "vip" && args[0] != "all") {
			return errors.New("want `bind vip` or `bind all`")
		}
		sc.BindVIP = args[0] == "vip"
		return nil
	},
	"idle": func(sc *Scenario, args []string) error {
		if len(args) != 2 {
			return errors.New("want `idle CONNECTIONS-PER-CLIENT EVERY`")
		}
		n, err1 := strconv.Atoi(args[0])
		d, err2 := time.ParseDuration(args[1])
		if err1 != nil || n < 1 || n > 5000 || err2 != nil || d <= 0 {
			return errors.New("want 1–5000 connections per client and a positive duration")
		}
		sc.Idle = IdleLoad{PerClient: n, Every: d}
		return nil
	},
	"churn": parseChurn,
	"holds": func(sc *Scenario, args []string) error {
		if len(args) != 1 {
			return errors.New("want `holds EVERY`")
		}
		d, err := time.ParseDuration(args[0])
		if err != nil || d < time.Second {
			return fmt.Errorf("%q: want a duration of at least 1s", args[0])
		}
		sc.HoldInterval = d
		return nil
	},
	"evict-oldest": func(sc *Scenario, args []string) error {
		if len(args) != 0 {
			return errors.New("`evict-oldest` takes no argument")
		}
		sc.EvictOldest = true
		return nil
	},
}

// Stretch multiplies every time of the scenario by f (a bigger run of the
// same schedule): events, the chaining window, the idle period, the churn.
func (sc *Scenario) Stretch(f float64) {
	if f == 1 || f <= 0 {
		return
	}
	mul := func(d time.Duration) time.Duration { return time.Duration(float64(d) * f).Round(time.Millisecond) }
	for i := range sc.Events {
		sc.Events[i].At = mul(sc.Events[i].At)
	}
	sc.Window, sc.Idle.Every, sc.HoldInterval = mul(sc.Window), mul(sc.Idle.Every), mul(sc.HoldInterval)
	if c := sc.Churn; c != nil {
		c.From, c.Until, c.Every = mul(c.From), mul(c.Until), mul(c.Every)
	}
}

// Needs is how many servers and muxes the scenario names (highest index + 1).
func (sc *Scenario) Needs() (servers, muxes int) {
	for _, i := range sc.InitialServers {
		servers = max(servers, i+1)
	}
	for _, i := range sc.InitialMuxes {
		muxes = max(muxes, i+1)
	}
	for _, e := range sc.Events {
		switch e.Action {
		case "add-server", "remove-server", "remove-heir", "fail-server", "set-weight", "fail-health", "restore-health":
			servers = max(servers, e.Args[0]+1)
		case "add-mux", "remove-mux", "kill-mux":
			muxes = max(muxes, e.Args[0]+1)
		case "apply":
			for _, i := range e.Args {
				servers = max(servers, i+1)
			}
		}
	}
	if sc.Churn != nil {
		servers = max(servers, sc.Churn.Servers)
	}
	return servers, muxes
}

// Duration is when the scenario ends.
func (sc *Scenario) Duration() time.Duration { return sc.Events[len(sc.Events)-1].At }
