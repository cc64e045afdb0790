package config

import (
	"fmt"
	"os"
)

// IsCheetah reports whether the VIP belongs to a Cheetah instance: its
// strategy takes keys from the controller (forwarding.StrategySpec.
// ServerKeys), or it has keys by hand. Only such a VIP takes keys pushed by
// the controller: a push for any other VIP is refused before anything
// attaches (a Beamer VIP's replies must never get cookies).
func (v AgentVIP) IsCheetah() bool {
	return v.Strategy.Spec().ServerKeys || v.Cheetah != nil
}

// checkStrategy: a VIP names its strategy only when it matters to the
// agent (empty is fine), and keys only go with a strategy that takes them.
func (v AgentVIP) checkStrategy() error {
	named := v.Strategy != ""
	if named && !v.Strategy.Known() {
		return fmt.Errorf("vip %v: strategy %q is not a strategy", v.VIP, v.Strategy)
	}
	if v.Cheetah != nil && named && !v.Strategy.Spec().ServerKeys {
		return fmt.Errorf("vip %v: cheetah keys for a %s VIP", v.VIP, v.Strategy)
	}
	return nil
}

// checkKeysFile refuses a configuration file holding Cheetah keys that
// others than its owner may read.
func checkKeysFile(path string, c *Agent) error {
	for _, v := range c.VIPs {
		if v.Cheetah == nil {
			continue
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			return fmt.Errorf("%s: holds cheetah keys with mode %04o, which lets others read them: chmod 600 %s", path, perm, path)
		}
		return nil
	}
	return nil
}
