package beamer

import (
	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// muxLoader: bucket words and their chain entries (pkg/dataplane/chains.go); no map
// beyond the per-instance ones.
type muxLoader struct{}

func init() { muxspi.Register(forwarding.StrategyBeamer, muxLoader{}) }

func (muxLoader) Prepare(muxspi.MuxHost) error { return nil }
func (muxLoader) Histories() bool              { return true }
func (muxLoader) NewState(forwarding.Instance, *forwarding.Table) (muxspi.InstanceState, error) {
	return nil, nil
}
