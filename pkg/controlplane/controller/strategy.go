package controller

import (
	"fmt"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// The controller knows strategies only through ctlstrategy: each strategy's
// package (pkg/strategy/NAME) registers its controller side there; its
// optional hooks (Finisher, Gater, SlotHolder, ExtraState, Ticker,
// KeyRotator, ShowReader, Background) are asked for where they apply. The
// hooks see the controller as a ctlstrategy.Ctl and an instance as a
// ctlstrategy.Instance (ctl_host.go).

// strategyOf is the controller side of cfg's strategy.
func strategyOf(cfg *forwarding.Instance) (ctlstrategy.Strategy, error) {
	s, ok := ctlstrategy.Lookup(cfg.Strategy)
	if !ok {
		return nil, fmt.Errorf("%w %q: strategy %q has no controller in this build", forwarding.ErrConfig, cfg.Name, cfg.Strategy)
	}
	return s, nil
}

// CheckInstance validates a configuration for creation. Every rule on one
// instance, the strategy's included (a Maglev table size must be prime), is
// forwarding.Instance.Validate's, so that ctl, requests, static files and
// muxes reading the store refuse the same things with the same words.
func CheckInstance(in *forwarding.Instance) error {
	if err := in.Validate(); err != nil {
		return err
	}
	if _, err := strategyOf(in); err != nil {
		return err
	}
	if err := in.Health.Check(); err != nil {
		return fmt.Errorf("%w %q: %v", forwarding.ErrConfig, in.Name, err)
	}
	// Checked at creation only, not by Validate: muxes, which never chain,
	// keep forwarding an instance stored before the rule existed.
	if err := forwarding.CheckChainWindow(in.ChainWindow); err != nil {
		return fmt.Errorf("%w %q: %v", forwarding.ErrConfig, in.Name, err)
	}
	return nil
}

// hasHistories tells whether the instance's buckets keep previous owners.
func hasHistories(cfg *forwarding.Instance) bool {
	s, err := strategyOf(cfg)
	return err == nil && s.Histories()
}
