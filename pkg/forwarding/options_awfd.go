package forwarding

// AWFDOptions are the awfd strategy's own settings (issue 14), json "awfd" in
// the instance configuration; its StrategySpec.Check validates them. The
// strategy's implementation adds its fields here.
type AWFDOptions struct{}
