package dataplane

import (
	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// beamerMux: bucket words and their chain entries (chains.go); no map
// beyond the per-instance ones.
type beamerMux struct{}

func init() { muxspi.Register(forwarding.StrategyBeamer, beamerMux{}) }

func (beamerMux) Prepare(muxspi.MuxHost) error { return nil }
func (beamerMux) Histories() bool              { return true }
func (beamerMux) NewState(forwarding.Instance, *forwarding.Table) (muxspi.InstanceState, error) {
	return nil, nil
}
