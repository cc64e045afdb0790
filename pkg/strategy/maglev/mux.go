package maglev

import (
	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// muxLoader: the Maglev table in the bucket array, and the connection table
// shared by all Maglev instances (created on first use).
type muxLoader struct{}

func init() { muxspi.Register(forwarding.StrategyMaglev, muxLoader{}) }

func (muxLoader) Prepare(h muxspi.MuxHost) error { return h.EnsureConnTrack() }
func (muxLoader) Histories() bool                { return false }
func (muxLoader) NewState(forwarding.Instance, *forwarding.Table) (muxspi.InstanceState, error) {
	return nil, nil
}
