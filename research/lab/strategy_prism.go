package lab

import "time"

// prismStrategy: bins plus the migrated-connection table; servers chain
// nothing (the MCT keeps moved connections where they are), and any B
// works.
type prismStrategy struct{}

func init() { registerStrategy(prismStrategy{}) }

func (prismStrategy) Name() string                            { return "prism" }
func (prismStrategy) Check(uint32) error                      { return nil }
func (prismStrategy) AgentWindow(time.Duration) time.Duration { return 0 }
func (prismStrategy) keepsMCT()                               {}
