package forwarding

// Prism: ECMP bins plus a migrated-connection table (mct.go); its options
// are PrismOptions.
func init() { RegisterStrategy(StrategySpec{Name: StrategyPrism, Check: checkPrism}) }
