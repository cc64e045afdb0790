package main

import "github.com/beamer-lb/beamer/pkg/dataplane"

// `beamer agent capture` (capture.go). Here, after agent.go, so that the
// agent command exists when it is added.
func init() { addCaptureCmd("agent", dataplane.AgentCapturePoints) }
