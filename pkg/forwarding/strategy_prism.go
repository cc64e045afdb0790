package forwarding

// Prism: ECMP bins plus a migrated-connection table (mct.go); its options
// are PrismOptions.
func init() {
	RegisterStrategy(StrategySpec{Name: StrategyPrism, Check: checkPrism,
		HasOptions: func(in *Instance) bool { return in.Prism != nil },
		FillDefaults: func(in *Instance) {
			o := in.PrismSettings()
			in.Prism = &o
		}})
}
