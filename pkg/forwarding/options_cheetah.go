package forwarding

// CheetahOptions are the cheetah strategy's own settings (issue 13), json "cheetah" in
// the instance configuration; its StrategySpec.Check validates them. The
// strategy's implementation adds its fields here.
type CheetahOptions struct{}
