// Package maglev is the Maglev strategy's own code on the Go side: the
// bucket array is Maglev's lookup table, rebuilt over the live backends,
// and muxes keep established connections in a connection table. Its
// controller side, its mux loader side and its reference-model decision
// register into the layers' strategy interfaces (ctlstrategy, muxspi,
// modelspi) in init(); pkg/strategy/all imports it. Its configuration
// rules are pkg/forwarding/strategy_maglev.go, its packet decision
// bpf/strategy/maglev.h.
package maglev
