// Package beamer is the Beamer strategy's own code on the Go side: stable
// hashing with daisy chaining. Its controller side (bucket moves by the
// paper's greedy rebalance, histories), its mux loader side and its
// reference-model decision register into the layers' strategy interfaces
// (ctlstrategy, muxspi, modelspi) in init(); pkg/strategy/all imports it.
// Its configuration rules are pkg/forwarding/strategy_beamer.go, its packet
// decision bpf/strategy/beamer.h.
package beamer
