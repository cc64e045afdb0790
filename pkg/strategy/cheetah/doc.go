// Package cheetah is the Cheetah strategy's own code on the Go side: so
// far its reference-model decision, registered into modelspi in init(); its
// cookie is cookie. Its controller, ring payload, mux loader and agent
// sides are still files of those layers (docs/architecture.md, "A new
// strategy").
package cheetah
