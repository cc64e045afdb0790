package dataplane

import (
	"github.com/beamer-lb/beamer/pkg/dataplane/muxspi"
	"github.com/beamer-lb/beamer/pkg/forwarding"
)

// maglevMux: the Maglev table in the bucket array, and the connection table
// shared by all Maglev instances (created on first use).
type maglevMux struct{}

func init() { muxspi.Register(forwarding.StrategyMaglev, maglevMux{}) }

func (maglevMux) Prepare(h muxspi.MuxHost) error { return h.EnsureConnTrack() }
func (maglevMux) Histories() bool                { return false }
func (maglevMux) NewState(forwarding.Instance, *forwarding.Table) (muxspi.InstanceState, error) {
	return nil, nil
}
