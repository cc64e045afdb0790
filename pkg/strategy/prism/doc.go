// Package prism is the Prism strategy's own code on the Go side: its
// controller side (migration rounds over the SCT, the final round,
// keep-alive pruning, metrics; ctlstrategy), its mux loader side (the
// migrated-connection table, muxspi), the mux daemon's keep-alive bits and
// their node API route (daemonspi.Server), its reference-model decision
// (modelspi) and its section of the ring's payloads (the MCT, ringspi),
// registered in init(); its algorithms are migration
// (docs/architecture.md, "A new strategy").
package prism
