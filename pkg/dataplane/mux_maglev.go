package dataplane

import "github.com/beamer-lb/beamer/pkg/forwarding"

// maglevMux: the Maglev table in the bucket array, and the connection table
// shared by all Maglev instances (ensureConnTrack, created on first use).
type maglevMux struct{}

func init() { registerMuxStrategy(forwarding.StrategyMaglev, maglevMux{}) }

func (maglevMux) prepare(m *Mux) error { return m.ensureConnTrack() }
func (maglevMux) histories() bool      { return false }
func (maglevMux) newState(forwarding.Instance, *forwarding.Table) (instanceState, error) {
	return nil, nil
}
