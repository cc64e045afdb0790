// Package awfd is the AWFD strategy's own code on the Go side (Spotlight's
// adaptive weighted flow dispatching): its controller side and background
// work (capacity polls, class records, their metrics), registered into
// ctlstrategy; the mux daemon's class record follower, registered into
// daemonspi; and its reference-model decision, registered into modelspi;
// all in init(). Its algorithms are classes. Its mux loader side is still
// a file of pkg/dataplane (docs/architecture.md, "A new strategy").
package awfd
