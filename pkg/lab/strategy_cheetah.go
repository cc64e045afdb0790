package lab

import (
	"fmt"
	"time"

	"github.com/beamer-lb/beamer/pkg/cheetah"
)

// cheetahStrategy: round robin for new connections, the cookie for the
// rest; its bucket table (clients without timestamps) is Beamer's, so the
// agents chain with the run's window. The lab draws the keys once per
// process and gives the same to the instance and every agent, as an
// operator copies them from `ctl show --json`. "cheetah" picks new
// connections by round robin; "cheetah-hash" is the same strategy with the
// hash policy (the Beamer bucket), for the round-robin vs hash comparison.
type cheetahStrategy struct{ name, policy, keys string }

func init() {
	k0, err0 := cheetah.NewKey()
	k1, err1 := cheetah.NewKey()
	if err0 != nil || err1 != nil {
		panic(fmt.Sprintf("lab: drawing cheetah keys: %v %v", err0, err1))
	}
	keys := k0.String() + "," + k1.String()
	registerStrategy(cheetahStrategy{name: "cheetah", policy: "rr", keys: keys})
	registerStrategy(cheetahStrategy{name: "cheetah-hash", policy: "hash", keys: keys})
}

func (s cheetahStrategy) Name() string                                 { return s.name }
func (cheetahStrategy) Check(uint32) error                             { return nil }
func (cheetahStrategy) AgentWindow(window time.Duration) time.Duration { return window }

func (s cheetahStrategy) createArgs() []string {
	// After the common --strategy NAME: the last value is the one taken.
	return []string{"--strategy", "cheetah", "--policy", s.policy, "--cheetah-keys", s.keys}
}
func (s cheetahStrategy) agentArgs() []string { return []string{"--cheetah-keys", s.keys} }

// strategyArgs are implemented by strategies whose instance or agents need
// more than the common flags.
type strategyArgs interface {
	createArgs() []string
	agentArgs() []string
}
