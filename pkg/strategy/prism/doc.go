// Package prism is the Prism strategy's own code on the Go side: so far
// its reference-model decision, registered into modelspi in init(); its
// algorithms are migration. Its controller, ring payload, mux loader and
// mux daemon sides are still files of those layers (docs/architecture.md,
// "A new strategy").
package prism
