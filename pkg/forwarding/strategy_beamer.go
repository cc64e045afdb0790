package forwarding

// Beamer: buckets with histories; its rules (B, K, the window) are the
// instance's general ones, so it adds none. Its mux and agent paths forward
// IPv6; a static mux configuration's instance chains for the default
// window, as `ctl create` gives it.
func init() {
	RegisterStrategy(StrategySpec{Name: StrategyBeamer, IPv6: true, StaticChainWindow: DefaultChainWindow})
}
