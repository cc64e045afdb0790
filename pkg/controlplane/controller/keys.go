package controller

import (
	"context"

	"github.com/beamer-lb/beamer/pkg/controlplane/ctlstrategy"
)

// RotateKey starts a key rotation of the named instance, whose strategy
// holds keys (ctlstrategy.KeyRotator: Cheetah's cookie keys; `ctl cheetah
// rotate-key`), and reports what it did.
func (c *Controller) RotateKey(ctx context.Context, name string, rot ctlstrategy.KeyRotation) (string, error) {
	in, err := c.instance(ctx, name)
	if err != nil {
		return "", err
	}
	s, err := strategyOf(in.config)
	if err != nil {
		return "", err
	}
	r, ok := s.(ctlstrategy.KeyRotator)
	if !ok {
		return "", badf("%s: instance %q uses strategy %s, which has no keys to rotate", OpCheetahRotate, name, in.config.Strategy)
	}
	return r.RotateKey(ctx, c.Ctl(in.config.Strategy), inst{c, in}, rot)
}
