package forwarding

// Maglev: the bucket array is the Maglev lookup table, whose size must be
// prime (maglev_size.go); muxes keep connection tables.
func init() {
	RegisterStrategy(StrategySpec{Name: StrategyMaglev, MaglevTable: true, ConnTable: true,
		Check: func(in *Instance) error { return CheckMaglevTableSize(in.Buckets) }})
}
