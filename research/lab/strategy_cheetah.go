package lab

import (
	"fmt"
	"strconv"
	"time"
)

// cheetahStrategy: a policy for new connections, the cookie for the rest;
// its bucket table (clients without timestamps) is Beamer's, so the agents
// chain with the run's window. The instance draws its keys at create and
// the controller pushes them to the agents (PUT /v1/cheetah), which take
// them only from the controller's address: no key is configured by hand,
// as in production. "cheetah" picks new connections by round robin,
// "cheetah-hash" by the Beamer bucket and "cheetah-p2c" by power of two
// choices over the loads the controller publishes, for the policy
// comparisons.
type cheetahStrategy struct{ name, policy string }

func init() {
	registerStrategy(cheetahStrategy{name: "cheetah", policy: "rr"})
	registerStrategy(cheetahStrategy{name: "cheetah-hash", policy: "hash"})
	registerStrategy(cheetahStrategy{name: "cheetah-p2c", policy: "p2c"})
}

func (s cheetahStrategy) Name() string                                 { return s.name }
func (cheetahStrategy) Check(uint32) error                             { return nil }
func (cheetahStrategy) AgentWindow(window time.Duration) time.Duration { return window }

func (s cheetahStrategy) createArgs() []string {
	// After the common --strategy NAME: the last value is the one taken.
	return []string{"--strategy", "cheetah", "--policy", s.policy}
}
func (cheetahStrategy) agentArgs() []string {
	// --cheetah: the VIP takes the keys the controller pushes (an agent
	// takes keys for its Cheetah VIPs only).
	return []string{"--controllers", ctlAddr.String() + "/32", "--cheetah"}
}

// RotateKey runs `ctl cheetah rotate-key` on the lab's instance: the new
// key reaches the muxes at once and becomes current for new connections
// settle seconds later (the scenario action rotate-key).
func (l *Lab) RotateKey(settle int) error {
	if _, ok := strategies[l.opts.Strategy].(cheetahStrategy); !ok {
		return fmt.Errorf("rotate-key: strategy %s has no cookie keys (cheetah only)", l.opts.Strategy)
	}
	_, err := l.Ctl("cheetah", "rotate-key", Instance, "--settle", strconv.Itoa(settle)+"s")
	return err
}

// strategyArgs are implemented by strategies whose instance or agents need
// more than the common flags.
type strategyArgs interface {
	createArgs() []string
	agentArgs() []string
}

// cheetahCounters sums the cheetah decision counters of the running muxes
// (nil for other strategies).
func (l *Lab) cheetahCounters() map[string]uint64 {
	if _, ok := strategies[l.opts.Strategy].(cheetahStrategy); !ok {
		return nil
	}
	sum := map[string]uint64{}
	for _, m := range l.muxes {
		if !m.running {
			continue
		}
		c, err := scrapeCounters(m.ns, "beamer_mux_cheetah_packets_total")
		if err != nil {
			continue
		}
		for k, v := range c {
			sum[k] += v
		}
	}
	return sum
}
