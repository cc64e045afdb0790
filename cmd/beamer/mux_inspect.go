package main

import (
	"io"

	"github.com/beamer-lb/beamer/pkg/dataplane"
)

// `beamer mux inspect` (inspect.go).
func init() {
	addInspect("mux", `Show what a mux forwards now: its VIPs (ports, strategy,
encapsulation, generation and incarnation, traffic), each table's buckets per
server, and its decision counters. Read from the kernel through the mux's
pinned program, so it works while the mux daemon is stopped or upgrading; it
changes nothing. Compare the buckets per server with 'beamer ctl show NAME'.`,
		func(w io.Writer, dir, format string) error {
			v, err := dataplane.InspectMux(dir)
			if err != nil {
				return err
			}
			return emit(w, format, v, func(w io.Writer) { printMuxInspect(w, v) })
		})
}
