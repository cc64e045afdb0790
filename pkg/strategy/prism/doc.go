// Package prism is the Prism strategy's own code on the Go side: its mux
// loader side (the migrated-connection table, muxspi), the mux daemon's
// keep-alive bits and their node API route (daemonspi.Server), and its
// reference-model decision (modelspi), registered in init(); its
// algorithms are migration. Its controller and ring payload sides are
// still files of those layers (docs/architecture.md, "A new strategy").
package prism
