package main

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/cheetah"
	"github.com/beamer-lb/beamer/pkg/forwarding"
	"github.com/spf13/cobra"
)

// cheetahCreateFlags are ctl create's options of the cheetah strategy.
type cheetahCreateFlags struct {
	policy *string
	key    *string
}

func addCheetahFlags(cmd *cobra.Command) *cheetahCreateFlags {
	return &cheetahCreateFlags{
		policy: cmd.Flags().String("policy", string(forwarding.CheetahRR), "cheetah: how a new connection's server is picked: rr, wrr (by bucket share, i.e. weight), p2c (power of two choices over published loads) or hash (the Beamer bucket)"),
		key:    cmd.Flags().String("cheetah-key", "", "cheetah: cookie key, 32 hex digits (default: drawn at random); the servers' agents must be given the same keys"),
	}
}

// apply fills the instance's cheetah options when the strategy is cheetah,
// and refuses cheetah flags given to another strategy.
func (f *cheetahCreateFlags) apply(cmd *cobra.Command, in *forwarding.Instance) error {
	if in.Strategy != forwarding.StrategyCheetah {
		if cmd.Flags().Changed("policy") || cmd.Flags().Changed("cheetah-key") {
			return fmt.Errorf("--policy and --cheetah-key are options of --strategy cheetah")
		}
		return nil
	}
	k, err := cheetah.NewKey()
	if err != nil {
		return err
	}
	if *f.key != "" {
		if k, err = cheetah.ParseKey(*f.key); err != nil {
			return err
		}
	}
	// The second slot gets its own random key: rotation writes the next
	// key there and makes it current.
	k2, err := cheetah.NewKey()
	if err != nil {
		return err
	}
	in.Cheetah = &forwarding.CheetahOptions{Policy: forwarding.CheetahPolicy(*f.policy), Keys: cheetah.Keys{Current: 0, Keys: [2]cheetah.Key{k, k2}}}
	return nil
}
