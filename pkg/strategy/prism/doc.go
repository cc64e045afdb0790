// Package prism is the Prism strategy's own code on the Go side: its
// controller side (Algorithms 1 and 2 over the SCT, the final round,
// keep-alive pruning and its poller, metrics; ctlstrategy), its mux loader
// side (the migrated-connection table, muxspi), the mux daemon's
// keep-alive bits and their node API route (daemonspi.Server), and its
// reference-model decision (modelspi), all registered in init(); its
// algorithms are migration.
package prism
