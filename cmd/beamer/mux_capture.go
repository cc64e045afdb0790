package main

import "github.com/beamer-lb/beamer/pkg/dataplane"

// `beamer mux capture` (capture.go). Here, after mux.go, so that the mux
// command exists when it is added.
func init() { addCaptureCmd("mux", dataplane.MuxCapturePoints) }
