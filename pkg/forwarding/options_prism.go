package forwarding

// PrismOptions are the prism strategy's own settings (issue 12), json "prism" in
// the instance configuration; its StrategySpec.Check validates them. The
// strategy's implementation adds its fields here.
type PrismOptions struct{}
