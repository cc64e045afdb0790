package main

import (
	"io"

	"github.com/beamer-lb/beamer/pkg/dataplane"
)

// `beamer agent inspect` (inspect.go).
func init() {
	addInspect("agent", `Show what a server's agent decides with now: the VIPs it serves (buckets,
chaining window, newest generation and incarnation seen), the sources it takes
encapsulated packets from, Cheetah key fingerprints (never keys) and its
decision counters. Read from the kernel through the agent's pinned program, so
it works while the agent daemon is stopped or upgrading; it changes nothing.`,
		func(w io.Writer, dir, format string) error {
			v, err := dataplane.InspectAgent(dir)
			if err != nil {
				return err
			}
			return emit(w, format, v, func(w io.Writer) { printAgentInspect(w, v) })
		})
}
