package forwarding

// Beamer: buckets with histories; its rules (B, K, the window) are the
// instance's general ones, so it adds none.
func init() { RegisterStrategy(StrategySpec{Name: StrategyBeamer}) }
