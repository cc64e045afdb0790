// Package awfd is the AWFD strategy's own code on the Go side (Spotlight's
// adaptive weighted flow dispatching): its controller side and background
// work (capacity polls, class records, their metrics), registered into
// ctlstrategy, and its reference-model decision, registered into modelspi,
// in init(); its algorithms are classes. Its mux loader and mux daemon
// sides are still files of those layers (docs/architecture.md, "A new
// strategy").
package awfd
