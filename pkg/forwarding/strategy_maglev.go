package forwarding

// Maglev: the bucket array is the Maglev lookup table, whose size must be
// prime (maglev_size.go).
func init() {
	RegisterStrategy(StrategySpec{Name: StrategyMaglev, Check: func(in *Instance) error { return checkMaglevSize(in.Buckets) }})
}
