// Command beamer is the product binary of the Beamer load balancer: the mux
// daemon, the server agent, the controller and its CLI (ctl), and the
// operator's tools (decode, status, inspect, capture, version). The lab, the
// simulations and the benchmarks are the beamer-lab command. Its
// commands live in cmd/internal/beamercli, one constructor per command, so
// that beamer-lab can run the product's own mux under an experiment's
// faults (beamer-lab mux) without the product binary carrying them.
package main

import "github.com/beamer-lb/beamer/cmd/internal/beamercli"

func main() { beamercli.Main() }
