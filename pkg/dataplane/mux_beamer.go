package dataplane

import "github.com/beamer-lb/beamer/pkg/forwarding"

// beamerMux: bucket words and their chain entries (chains.go); no map
// beyond the per-instance ones.
type beamerMux struct{}

func init() { registerMuxStrategy(forwarding.StrategyBeamer, beamerMux{}) }

func (beamerMux) prepare(*Mux) error { return nil }
func (beamerMux) histories() bool    { return true }
func (beamerMux) newState(forwarding.Instance, *forwarding.Table) (instanceState, error) {
	return nil, nil
}
