package lab

import "time"

// beamerStrategy: stable hashing with daisy chaining; the agents chain for
// the run's window.
type beamerStrategy struct{}

func init() { registerStrategy(beamerStrategy{}) }

func (beamerStrategy) Name() string                              { return "beamer" }
func (beamerStrategy) Check(uint32) error                        { return nil }
func (beamerStrategy) AgentWindow(w time.Duration) time.Duration { return w }
