package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// Duration is a time.Duration that reads and writes as "30s" in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

// Params are everything a run depends on: with the same parameters (seed
// included) a run builds the same lab, opens the same flows and plays the
// same schedule.
type Params struct {
	Experiment string `json:"experiment"` // built-in experiment, or "scenario" for a file
	Strategy   string `json:"strategy"`   // a registered strategy (strategy.go)
	Clients    int    `json:"clients"`
	PerClient  int    `json:"connections_per_client"`
	FileSize   int    `json:"file_size"`
	Buckets    uint32 `json:"buckets"`
	// Window is the chaining window of the beamer strategy (a strategy's
	// agents may run with none: Strategy.AgentWindow).
	Window     Duration `json:"chaining_window"`
	Stall      Duration `json:"stall_timeout"`
	Persistent bool     `json:"persistent"`
	MPTCP      bool     `json:"mptcp"`
	// UDPFlows: long-lived UDP flows per client to VIP:53 beside the TCP
	// load (issue 17); 0: none.
	UDPFlows int `json:"udp_flows_per_client,omitempty"`
	// QUICFlows: QUIC connections per client to VIP:443, routed by
	// connection id, each migrating once (issue 17); 0: none.
	QUICFlows int `json:"quic_flows_per_client,omitempty"`
	// Encap: the instance's encapsulation, ipip (default, "") or gue
	// (encap.go).
	Encap string `json:"encap,omitempty"`
	// Family 6 runs the service over IPv6 (research/lab/family.go): the VIP,
	// the servers, GUE over IPv6 and the clients' connections; 0 or 4 is
	// IPv4, as before the field existed.
	Family int    `json:"family,omitempty"`
	Seed   int64  `json:"seed"`
	Store  string `json:"store"`
	// Shape of the built-in experiments.
	Servers   int      `json:"servers"`
	Muxes     int      `json:"muxes"`
	Removed   int      `json:"servers_removed,omitempty"` // affinity, synflood
	FloodRate int      `json:"flood_rate,omitempty"`      // synflood, SYNs/s asked
	Warmup    Duration `json:"warmup"`                    // load before the first event
	Step      Duration `json:"step"`                      // between events
}

// Sizes of the built-in experiments: the paper's load scaled to one
// machine, a CI run of minutes, and the demo.
const (
	SizePaper = "paper"
	SizeCI    = "ci"
	SizeDemo  = "demo"
)

// Sizes lists the sizes, for help texts.
var Sizes = []string{SizePaper, SizeCI, SizeDemo}

// DefaultParams are an experiment's parameters at a size.
func DefaultParams(experiment, size, strategy string) (Params, error) {
	e, ok := experiments[experiment]
	if !ok {
		return Params{}, fmt.Errorf("unknown experiment %q; experiments: %s", experiment, ExperimentNames())
	}
	// 1009 buckets: Maglev tables need a prime size.
	p := Params{Experiment: experiment, Strategy: strategy, Buckets: 1009, FileSize: 1 << 20,
		Window: Duration(4 * time.Minute), Stall: Duration(15 * time.Second), Persistent: true, Seed: 1, Store: "embedded"}
	switch size {
	case SizePaper: // the paper's 7 clients × 100 connections, 1 MB files
		p.Clients, p.PerClient, p.Warmup, p.Step = 7, 100, Duration(10*time.Second), Duration(20*time.Second)
	case SizeCI:
		p.Clients, p.PerClient, p.FileSize, p.Warmup, p.Step = 3, 20, 256<<10, Duration(4*time.Second), Duration(6*time.Second)
	case SizeDemo:
		p.Clients, p.PerClient, p.FileSize, p.Warmup, p.Step = 2, 25, 256<<10, Duration(3*time.Second), Duration(4*time.Second)
	default:
		return Params{}, fmt.Errorf("unknown size %q: want %s, %s or %s", size, SizePaper, SizeCI, SizeDemo)
	}
	e.shape(&p, size)
	return p, nil
}

// Validate rejects parameters no lab can run.
func (p *Params) Validate() error {
	strat, err := StrategyOf(p.Strategy)
	if err != nil {
		return err
	}
	switch {
	case p.Clients < 1 || p.Clients > MaxClients:
		return fmt.Errorf("clients %d: want 1–%d", p.Clients, MaxClients)
	case p.PerClient < 1 || p.PerClient > 5000:
		return fmt.Errorf("connections per client %d: want 1–5000", p.PerClient)
	case p.UDPFlows < 0 || p.UDPFlows > 500:
		return fmt.Errorf("UDP flows per client %d: want 0–500", p.UDPFlows)
	case p.QUICFlows < 0 || p.QUICFlows > 200:
		return fmt.Errorf("QUIC flows per client %d: want 0–200", p.QUICFlows)
	case p.FileSize < 1 || p.FileSize > 1<<30:
		return fmt.Errorf("file size %d: want 1 byte to 1 GiB", p.FileSize)
	case p.Stall < Duration(time.Second):
		return errors.New("stall timeout: want at least 1s (and more than the BGP hold time, 3s, to survive a mux kill)")
	case p.Window < 0:
		return errors.New("chaining window: must not be negative")
	case p.Buckets <= uint32(max(p.Servers, 1)):
		return fmt.Errorf("buckets %d: need more buckets than servers (%d)", p.Buckets, p.Servers)
	case strat.Check(p.Buckets) != nil:
		return strat.Check(p.Buckets)
	case p.Seed < 0:
		return errors.New("seed: must not be negative")
	case p.Family != 0 && p.Family != 4 && p.Family != 6:
		return fmt.Errorf("family %d: want 4 or 6", p.Family)
	case p.Family == 6 && !forwarding.Strategy(p.Strategy).Spec().IPv6:
		return fmt.Errorf("family 6: only strategy %s forwards IPv6, not %q", ipv6Strategies(), p.Strategy)
	case p.Family == 6 && p.FloodRate > 0:
		return errors.New("family 6: the lab's SYN flood is IPv4 only")
	case p.Family == 6 && p.Encap == "ipip":
		return errors.New("family 6: IPv6 travels in GUE only, not encap ipip")
	case p.Family == 6 && (p.UDPFlows > 0 || p.QUICFlows > 0):
		return errors.New("family 6: the lab's UDP and QUIC flows are IPv4 only; run the TCP load")
	case p.Warmup < 0 || p.Step <= 0:
		return errors.New("warmup must not be negative and step must be positive")
	}
	if err := checkEncap(p.Encap); err != nil {
		return err
	}
	if e, ok := experiments[p.Experiment]; ok {
		return e.check(p)
	}
	return nil
}
